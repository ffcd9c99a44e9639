package plugin

import (
	"net"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// A server that refuses the connection gets kubectl's hint, naming the host,
// after the error with its context; exit code 1 as kubectl's.
func TestExecuteHintsAtARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: the connection is refused

	for _, args := range [][]string{
		{"status", "--server", "https://" + addr},
		{"gc", "-A", "--server", "https://" + addr},
	} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		root := NewCmdVmctl(streams)
		root.SetArgs(args)
		if code := Execute(root, streams); code != 1 {
			t.Errorf("%v: exit code %d, want 1", args, code)
		}
		got := errOut.String()
		for _, want := range []string{
			"error: list virtualmachines",
			"connect: connection refused",
			"The connection to the server " + addr + " was refused - did you specify the right host or port?",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%v: stderr = %q, want it to contain %q", args, got, want)
			}
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout = %q, want nothing", args, out)
		}
	}
}

// Other errors are printed as they are, without the hint.
func TestExecuteNoHintForOtherErrors(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	root := NewCmdVmctl(streams)
	root.SetArgs([]string{"scaffold"})
	if code := Execute(root, streams); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if got := errOut.String(); !strings.HasPrefix(got, "error: scaffold needs a KIND") || strings.Contains(got, "connection") {
		t.Errorf("stderr = %q, want the scaffold error alone", got)
	}
}
