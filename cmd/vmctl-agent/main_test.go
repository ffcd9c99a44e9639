package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
)

// testStreams returns streams over buffers, and the Out buffer.
func testStreams() (cmdutil.IOStreams, *bytes.Buffer) {
	out := &bytes.Buffer{}
	return cmdutil.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: &bytes.Buffer{}}, out
}

// The image runs `vmctl-agent PROTOTYPE`: PROTOTYPE must reach the agent as
// its argument, not be taken for a subcommand.
func TestRootTakesPrototype(t *testing.T) {
	streams, _ := testStreams()
	cmd := newCmd(streams)
	found, args, err := cmd.Find([]string{"testvm", "--proto-namespace=templates"})
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if found != cmd {
		t.Fatalf("Find resolved %q, want the agent command itself", found.CommandPath())
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("ParseFlags: %v", err)
	}
	if got := cmd.Flags().Args(); len(got) != 1 || got[0] != "testvm" {
		t.Errorf("positional args = %q, want [testvm]", got)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("ValidateArgs: %v", err)
	}
}

func TestHelpNamesTheAgentCommand(t *testing.T) {
	streams, out := testStreams()
	cmd := newCmd(streams)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	if want := "Usage:\n  kubectl vmctl agent PROTOTYPE\n"; !strings.Contains(out.String(), want) {
		t.Errorf("--help output lacks %q:\n%s", want, out)
	}
}

// Without PROTOTYPE the agent fails before touching any cluster.
func TestMissingPrototype(t *testing.T) {
	streams, _ := testStreams()
	cmd := newCmd(streams)
	cmd.SetArgs([]string{})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "exactly one argument") {
		t.Errorf("Execute() = %v, want the one-argument error", err)
	}
}
