package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// UpOptions configure `up` and `demo`.
type UpOptions struct {
	Nodes         int
	Dir           string
	VmctlBinary   string
	LauncherImage string

	Out, ErrOut io.Writer
}

func newUpOptions(cmd *cobra.Command) *UpOptions {
	return &UpOptions{Nodes: 3, Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
}

func (o *UpOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().IntVar(&o.Nodes, "nodes", o.Nodes, "number of fake nodes")
	cmd.Flags().StringVar(&o.Dir, "dir", o.Dir, "working directory for data, certificates and logs (default: a temporary directory, removed on exit)")
	cmd.Flags().StringVar(&o.VmctlBinary, "vmctl-binary", o.VmctlBinary, "kubectl-vmctl binary the kubelet double runs in agent Pods (default: bin/kubectl-vmctl when built)")
	cmd.Flags().StringVar(&o.LauncherImage, "launcher-image", o.LauncherImage, "virt-launcher image KubeVirt's virt-controller puts in launcher Pods (kwok's fake nodes never pull it); empty means quay.io/kubevirt/virt-launcher of the KubeVirt version run")
}

func newCmdUp() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a control plane with fake nodes and KubeVirt's real virt-api and virt-controller, and keep it running until Ctrl-C",
		Args:  cobra.NoArgs,
	}
	o := newUpOptions(cmd)
	o.addFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		return o.Run(cmd.Context(), nil)
	}
	return cmd
}

// Complete fills in the kubectl-vmctl binary when it was built into bin/.
func (o *UpOptions) Complete() error {
	if o.VmctlBinary != "" {
		abs, err := filepath.Abs(o.VmctlBinary)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("--vmctl-binary: %w; run `make build` first", err)
		}
		o.VmctlBinary = abs
		return nil
	}
	if root, err := testcluster.RepoRoot(); err == nil {
		if p := filepath.Join(root, "bin", "kubectl-vmctl"); fileExists(p) {
			o.VmctlBinary = p
		}
	}
	return nil
}

// ensureBinaries builds what .cache lacks of the control plane and KubeVirt
// side by side. KubeVirt pins Kubernetes libraries of its own, so the two
// builds compile different packages and neither waits for the other; each
// takes the CPU the other leaves while it downloads modules or links.
func ensureBinaries(ctx context.Context, progress io.Writer) (testcluster.Binaries, kubevirt.Binaries, error) {
	var bins testcluster.Binaries
	var kvBins kubevirt.Binaries
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		bins, err = testcluster.EnsureBinaries(ctx, "", progress)
		return err
	})
	g.Go(func() (err error) {
		kvBins, err = kubevirt.EnsureBinaries(ctx, "", progress)
		return err
	})
	return bins, kvBins, g.Wait()
}

// Run starts the cluster, KubeVirt and the doubles, runs then (if set) with
// the running cluster, and waits for ctx to end before stopping everything.
// It returns nil after ctx ended and everything it started was stopped and
// removed: a Ctrl-C is how the cluster is meant to stop.
func (o *UpOptions) Run(ctx context.Context, then func(ctx context.Context, c *testcluster.Cluster) error) (err error) {
	bins, kvBins, err := ensureBinaries(ctx, o.ErrOut)
	if err != nil {
		return err
	}
	c, err := testcluster.Start(ctx, testcluster.Options{
		Nodes: o.Nodes, Dir: o.Dir, Binaries: bins, Log: o.ErrOut, CRDs: []string{kvBins.CRDs},
	})
	if err != nil {
		return err
	}
	defer func() {
		_, _ = fmt.Fprintln(o.ErrOut, "stopping the cluster...")
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop the cluster: %w", stopErr))
			return
		}
		_, _ = fmt.Fprintln(o.ErrOut, "cluster stopped")
	}()
	kv, err := kubevirt.Start(ctx, c, kubevirt.Options{Binaries: kvBins, LauncherImage: o.LauncherImage, Log: o.ErrOut})
	if err != nil {
		return err
	}

	_, _ = fmt.Fprintf(o.Out, "cluster up in %s: %d nodes; logs in %s\n"+
		"KubeVirt %s: the real virt-api (webhooks at %s) and virt-controller, up in %s\n"+
		"kubeconfig: %s\n\n  export KUBECONFIG=%s\n\n",
		c.StartupTime.Round(10*time.Millisecond), len(c.Nodes), c.Dir,
		kv.Binaries.Version, kv.APIURL, kv.StartupTime.Round(10*time.Millisecond),
		c.Kubeconfig, c.Kubeconfig)

	// The doubles log to a file beside the components' logs, so their lines
	// do not interleave with the walkthrough on the terminal.
	logPath := filepath.Join(c.Dir, "doubles.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(ctx)
	doubles, doublesDone := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(doublesDone)
		doubles <- runDoubles(ctx, c, kv, o.VmctlBinary, log)
	}()
	// The agents the kubelet double runs are gone before the cluster stops.
	defer func() { cancel(); <-doublesDone }()
	if o.VmctlBinary != "" {
		_, _ = fmt.Fprintf(o.Out, "stand-ins (log: %s): virt-handler's part for VMIs, and a kubelet running agent Pods with %s\n", logPath, o.VmctlBinary)
	} else {
		_, _ = fmt.Fprintf(o.Out, "stand-in (log: %s): virt-handler's part for VMIs; no kubectl-vmctl binary (run `make build` or pass --vmctl-binary): agent Pods will stay Pending\n", logPath)
	}

	if then != nil {
		if err := then(ctx, c); err != nil {
			return err
		}
	}
	_, _ = fmt.Fprintln(o.Out, "Ctrl-C stops the cluster.")
	select {
	case <-ctx.Done():
		return nil
	case err := <-doubles:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("a stand-in stopped: %w", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
