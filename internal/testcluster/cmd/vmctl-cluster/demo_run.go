package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// demoRunner runs the walkthrough's commands against one cluster and prints
// each as a person would type it.
type demoRunner struct {
	out, errOut io.Writer
	vmctl       string
	env         []string
	kube        kubernetes.Interface
	virt        kubevirt.Interface
	// timeout bounds each wait.
	timeout time.Duration
}

func newDemoRunner(o *UpOptions, c *testcluster.Cluster) (*demoRunner, error) {
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	virt, err := kubevirt.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("kubevirt client: %w", err)
	}
	return &demoRunner{
		out: o.Out, errOut: o.ErrOut, vmctl: o.VmctlBinary,
		// NO_COLOR is left as the user has it, so a terminal gets colour.
		env:  append(os.Environ(), "KUBECONFIG="+c.Kubeconfig),
		kube: kube, virt: virt, timeout: demoTimeout,
	}, nil
}

// printf writes to the terminal; a failed write is not worth stopping the
// walkthrough for.
func (r *demoRunner) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.out, format, args...)
}

// step prints a heading for the next part of the walkthrough.
func (r *demoRunner) step(title string) {
	r.printf("\n== %s\n", title)
}

// command builds argv, running `kubectl vmctl` as the binary itself: the
// user's kubectl may not find the plugin on PATH.
func (r *demoRunner) command(ctx context.Context, argv []string) *exec.Cmd {
	if len(argv) > 1 && argv[0] == "kubectl" && argv[1] == "vmctl" {
		argv = append([]string{r.vmctl}, argv[2:]...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.out, r.errOut
	return cmd
}

// run prints and runs one command, its output going to the terminal.
func (r *demoRunner) run(ctx context.Context, argv ...string) error {
	r.printf("\n$ %s\n", shellLine(argv))
	if err := r.command(ctx, argv).Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return nil
}

// pipe prints and runs `from | to`.
func (r *demoRunner) pipe(ctx context.Context, from, to []string) error {
	line := shellLine(from) + " | " + shellLine(to)
	r.printf("\n$ %s\n", line)
	var manifests bytes.Buffer
	src := r.command(ctx, from)
	src.Stdout = &manifests
	if err := src.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(from, " "), err)
	}
	dst := r.command(ctx, to)
	dst.Stdin = &manifests
	if err := dst.Run(); err != nil {
		return fmt.Errorf("%s: %w", line, err)
	}
	return nil
}

// installCRD installs what every fleet of the cluster shares, once, as a
// cluster admin does before the first fleet, and waits until the API
// server serves the stores, which each fleet's manifests hold one of.
func (r *demoRunner) installCRD(ctx context.Context) error {
	r.step("Once per cluster: the CRD of the VM revision stores, which every fleet shares")
	if err := r.pipe(ctx, []string{"kubectl", "vmctl", "scaffold", "crd"}, []string{"kubectl", "apply", "-f", "-"}); err != nil {
		return err
	}
	return r.run(ctx, "kubectl", "wait", "--for", "condition=established", "crd/vmrevisionstores.vmctl.kubevirt.io")
}

// shellLine is argv as a person types it in a POSIX shell: an argument
// with characters the shell would read otherwise, such as a JSON patch,
// in single quotes, so that the printed line works when pasted.
func shellLine(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = a
		if a == "" || strings.ContainsFunc(a, unsafeInShell) {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

// unsafeInShell reports whether a POSIX shell reads c as more than itself.
func unsafeInShell(c rune) bool {
	safe := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,@%+", c)
	return !safe
}
