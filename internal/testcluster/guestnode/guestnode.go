// Package guestnode runs a cluster whose real node boots real guests: the
// control plane, the real node (package node) with containerd in a PID
// namespace of its own, KubeVirt v1.7.0 (kubevirt.NodeRelease) with
// emulation on and its own virt-handler, and the images that takes
// (package images) and the guest (package guest) imported. The end-to-end
// package internal/e2e/realguest and `vmctl-cluster demo-real` run it.
//
// The kwok node every cluster has is tainted vmctl.test/kwok:NoSchedule, so
// that every Pod lands on the real node.
package guestnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guest"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt/images"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// Options configure Start.
type Options struct {
	// Images are more image tarballs for the node, such as the agent's.
	Images []string
	// Dir is the cluster's directory; empty means a temporary one.
	Dir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Env is the running cluster. Its fields are set by Start.
type Env struct {
	Cluster  *testcluster.Cluster
	Node     *node.Node
	KubeVirt *kubevirt.KubeVirt
	// Guest is the guest image the node holds, for a prototype's kernel boot.
	Guest guest.Image
}

// KwokTaint keeps Pods off the kwok node.
var KwokTaint = corev1.Taint{Key: "vmctl.test/kwok", Effect: corev1.TaintEffectNoSchedule}

// Start builds what is missing (about 15 minutes the first time, see
// docs/development.md), then starts the cluster. On error, what it started
// is stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	start := time.Now()
	bins, err := testcluster.EnsureBinaries(ctx, "", logw)
	if err != nil {
		return nil, fmt.Errorf("build the control plane: %w", err)
	}
	kvBins, err := kubevirt.EnsureRelease(ctx, kubevirt.NodeRelease, "", logw)
	if err != nil {
		return nil, fmt.Errorf("build KubeVirt: %w", err)
	}
	nodeBins, err := node.EnsureBinaries(ctx, "", logw)
	if err != nil {
		return nil, fmt.Errorf("build the node's runtime: %w", err)
	}
	imgs, err := images.EnsureNode(ctx, logw)
	if err != nil {
		return nil, fmt.Errorf("build KubeVirt's node side and its images: %w", err)
	}
	g, err := guest.Ensure(ctx, "", logw)
	if err != nil {
		return nil, fmt.Errorf("build the guest: %w", err)
	}
	_, _ = fmt.Fprintf(logw, "guestnode: builds ready in %s\n", time.Since(start).Round(time.Second))

	env := &Env{Guest: g}
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Stop())
		}
	}()
	if env.Cluster, err = testcluster.Start(ctx, testcluster.Options{Binaries: bins, Dir: opts.Dir, CRDs: []string{kvBins.CRDs}, BindAddress: "0.0.0.0", Log: logw}); err != nil {
		return env, fmt.Errorf("start the control plane: %w", err)
	}
	if env.Node, err = node.Start(ctx, env.Cluster, node.Options{
		Binaries:        nodeBins,
		Images:          append(append([]string{}, opts.Images...), imgs.Tarball, g.Tarball),
		Log:             logw,
		Timeout:         5 * time.Minute,
		OwnPIDNamespace: true,
	}); err != nil {
		return env, fmt.Errorf("start the real node: %w", err)
	}
	if err := env.taintKwokNodes(ctx); err != nil {
		return env, err
	}
	if env.KubeVirt, err = kubevirt.Start(ctx, env.Cluster, kubevirt.Options{Binaries: kvBins, Emulation: true, Log: logw}); err != nil {
		return env, fmt.Errorf("start KubeVirt: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	n := kubevirt.HandlerNode{Name: env.Node.Name, KubeletRoot: env.Node.KubeletRoot(), StateDir: filepath.Join(env.Node.Dir, "kubevirt")}
	if err := env.KubeVirt.StartHandler(hctx, n); err != nil {
		return env, fmt.Errorf("start virt-handler: %w", err)
	}
	return env, nil
}

// taintKwokNodes keeps Pods off the kwok nodes.
func (e *Env) taintKwokNodes(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(e.Cluster.RESTConfig)
	if err != nil {
		return err
	}
	for _, name := range e.Cluster.Nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nd, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			nd.Spec.Taints = append(nd.Spec.Taints, KwokTaint)
			_, err = kube.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("taint kwok node %s: %w", name, err)
		}
	}
	return nil
}

// Stop removes virt-handler, then stops the node and the cluster. It is safe
// on a partly started Env.
func (e *Env) Stop() error {
	var errs []error
	if e.KubeVirt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs = append(errs, e.KubeVirt.StopHandler(ctx))
		cancel()
	}
	if e.Node != nil {
		errs = append(errs, e.Node.Stop())
	}
	if e.Cluster != nil {
		errs = append(errs, e.Cluster.Stop())
	}
	return errors.Join(errs...)
}

// StopOnSignal stops the Env when the process gets SIGINT or SIGTERM (see
// node.Node.StopOnSignal). Call the returned function to stop listening.
func (e *Env) StopOnSignal() (cancel func()) {
	return e.Node.StopOnSignal(func() { _ = e.Cluster.Stop() })
}
