package testcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

func TestExecName(t *testing.T) {
	for pkg, want := range map[string]string{
		"go.etcd.io/etcd/server/v3":            "server",
		"k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
		"./cmd/kubevirt-manifests":             "kubevirt-manifests",
		"example.com/v2":                       "example.com", // as go build names it
		"example.com/tool/v0":                  "v0",          // v0 and v1 are no major-version suffix
		"example.com/tool/v1x":                 "v1x",
		"v3":                                   "v3",
	} {
		if got := execName(pkg); got != want {
			t.Errorf("execName(%q) = %q, want %q", pkg, got, want)
		}
	}
}

// writeModule writes a module with two commands, one under a major-version
// path, as the control plane has (etcd's go.etcd.io/etcd/server/v3).
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.21\n",
		"one/main.go":       "package main\n\nfunc main() {}\n",
		"server/v3/main.go": "package main\n\nfunc main() {}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildCommands(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		ci.Skip(t, "no go command")
	}
	mod := writeModule(t)
	bin := filepath.Join(t.TempDir(), "bin")
	cmds := []Command{{Name: "one", Pkg: "./one"}, {Name: "etcd", Pkg: "example.com/m/server/v3"}}
	if err := BuildCommands(t.Context(), mod, bin, cmds, ""); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != 2 || got[0] != "etcd" || got[1] != "one" {
		t.Errorf("binaries %v, want [etcd one]", got)
	}
}

func TestBuildCommandsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := BuildCommands(ctx, writeModule(t), t.TempDir(), []Command{{Name: "one", Pkg: "./one"}}, "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one that wraps context.Canceled, so the demo's Ctrl-C reads as a clean stop", err)
	}
}

// TestBuildCommandsNiced: the build runs under nice and names its binaries
// as BuildCommands does.
func TestBuildCommandsNiced(t *testing.T) {
	for _, tool := range []string{"go", "nice"} {
		if _, err := exec.LookPath(tool); err != nil {
			ci.Skip(t, "no "+tool+" command")
		}
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := BuildCommandsNiced(t.Context(), 19, writeModule(t), bin, []Command{{Name: "etcd", Pkg: "example.com/m/server/v3"}}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "etcd")); err != nil {
		t.Errorf("the niced build made no etcd: %v", err)
	}
}
