package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guestnode"
)

// guestBoot bounds the wait for the guests: two boot at once under TCG.
const guestBoot = 5 * time.Minute

func newCmdDemoReal() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo-real",
		Short: "As root: start a cluster whose real node boots real guests, walk through kubectl-vmctl on it, and keep it running until Ctrl-C",
		Args:  cobra.NoArgs,
	}
	o := newUpOptions(cmd)
	var image, archive string
	cmd.Flags().StringVar(&o.VmctlBinary, "vmctl-binary", o.VmctlBinary, "kubectl-vmctl binary (default: bin/kubectl-vmctl when built)")
	cmd.Flags().StringVar(&image, "image", "", "the agent image's name, as `make image` tagged it")
	cmd.Flags().StringVar(&archive, "image-archive", "", "the agent image's tarball for this machine, as `make image` wrote it")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if os.Geteuid() != 0 {
			return errors.New("demo-real runs a real node (kubelet, containerd, qemu): run it as root, e.g. sudo make demo-real")
		}
		if image == "" || archive == "" {
			return errors.New("demo-real needs --image and --image-archive: run `make demo-real`, which builds the agent image first")
		}
		if !fileExists(archive) {
			return fmt.Errorf("--image-archive %s: no such file; run `make image`, which writes it under dist/", archive)
		}
		if err := o.Complete(); err != nil {
			return err
		}
		if o.VmctlBinary == "" {
			return errors.New("demo-real needs a kubectl-vmctl binary: run `make build` or pass --vmctl-binary")
		}
		env, err := guestnode.Start(cmd.Context(), guestnode.Options{Images: []string{archive}, Log: o.ErrOut})
		if err != nil {
			return err
		}
		defer func() {
			_, _ = fmt.Fprintln(o.ErrOut, "stopping the cluster...")
			if err := env.Stop(); err != nil {
				_, _ = fmt.Fprintln(o.ErrOut, "stop the cluster:", err)
			}
		}()
		if err := demoReal(cmd.Context(), o, env, image); err != nil && cmd.Context().Err() == nil {
			return err
		}
		_, _ = fmt.Fprintln(o.Out, "Ctrl-C stops the cluster.")
		<-cmd.Context().Done()
		return nil
	}
	return cmd
}

// demoReal walks through a Deployment of agents whose VMs boot a real guest:
// their consoles, and a Service that reaches each guest.
func demoReal(ctx context.Context, o *UpOptions, env *guestnode.Env, image string) error {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return fmt.Errorf("finding testdata/guest.yaml: %w", err)
	}
	r, err := newDemoRunner(o, env.Cluster)
	if err != nil {
		return err
	}
	r.timeout = guestBoot
	r.step("A prototype whose VMs boot a real guest: Debian's kernel and a busybox initramfs, under qemu's emulation")
	if err := r.run(ctx, "kubectl", "apply", "-f", filepath.Join(root, "testdata", "guest.yaml")); err != nil {
		return err
	}
	if err := r.installCRD(ctx); err != nil {
		return err
	}
	r.step("A Deployment of 2 agents with a PodDisruptionBudget: each Pod Ready once its guest answers HTTP")
	scaffold := []string{"kubectl", "vmctl", "scaffold", "deployment", "guest", "--replicas", "2", "--pdb", "1", "--image", image}
	if err := r.pipe(ctx, scaffold, []string{"kubectl", "apply", "-f", "-"}); err != nil {
		return err
	}
	if err := r.waitPaired(ctx, "guest", "vmctl-guest", 2); err != nil {
		return err
	}
	if err := r.run(ctx, "kubectl", "get", "vmi", "-o", "wide"); err != nil {
		return err
	}
	r.step("Each guest's serial console, as KubeVirt's guest-console-log container shows it")
	if err := r.run(ctx, "kubectl", "logs", "-l", "kubevirt.io=virt-launcher", "-c", "guest-console-log", "--prefix", "--tail=3"); err != nil {
		return err
	}
	r.step("A Service over the prototype's labels, reached from outside the cluster's Pods")
	if err := r.run(ctx, "kubectl", "create", "service", "clusterip", "guest", "--tcp=80:80"); err != nil {
		return err
	}
	if err := getEachGuest(ctx, r, env); err != nil {
		return err
	}
	r.printf("\nYour turn. The cluster keeps running; in another terminal:\n\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n  kubectl vmctl status\n  kubectl scale deployment/vmctl-guest --replicas=1\n\n",
		env.Cluster.Kubeconfig, filepath.Dir(o.VmctlBinary))
	return nil
}

// getEachGuest GETs the guest Service's ClusterIP from the node's client
// namespace until both guests answered, and prints what each said.
func getEachGuest(ctx context.Context, r *demoRunner, env *guestnode.Env) error {
	svc, err := r.kube.CoreV1().Services(demoNamespace).Get(ctx, "guest", metav1.GetOptions{})
	if err != nil {
		return err
	}
	url := "http://" + svc.Spec.ClusterIP + "/"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: env.Node.DialFromClient, DisableKeepAlives: true}}
	r.printf("\nGET %s from a network namespace outside the cluster:\n", url)
	answered := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for len(answered) < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s: %d of 2 guests answered within a minute", url, len(answered))
		}
		resp, err := client.Get(url)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(time.Second)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		host := strings.TrimSpace(string(body))
		if !answered[host] {
			answered[host] = true
			r.printf("  %s %s\n", resp.Status, host)
		}
	}
	return nil
}
