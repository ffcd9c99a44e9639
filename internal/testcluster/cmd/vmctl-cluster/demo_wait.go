package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// waitPaired waits until the workload named instance has exactly want Ready
// agent Pods, each owning a ready VM derived from proto and pinned to the
// Pod's node, and prints the pairs. It gives up after r.timeout, saying
// what was still missing.
func (r *demoRunner) waitPaired(ctx context.Context, proto, instance string, want int) error {
	r.printf("\nwaiting for %d agent Pods of %s, each with a ready VM derived from %s...\n", want, instance, proto)
	podSelector := labels.Set{
		contract.LabelName:      contract.AppName,
		contract.LabelInstance:  instance,
		contract.LabelComponent: contract.ComponentAgent,
	}.String()
	begin := time.Now()
	// missing is what the last successful look found lacking; listErr is the
	// last failed look, reported only when no look succeeded (near the
	// deadline, client-go's rate limiter fails lists before they are sent).
	var missing string
	var listErr error
	var pairs []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, r.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := r.kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector})
		if err != nil {
			listErr = fmt.Errorf("listing agent Pods: %w", err)
			return false, nil
		}
		vms, err := r.virt.KubevirtV1().VirtualMachines(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: derive.PrototypeSelector(proto)})
		if err != nil {
			listErr = fmt.Errorf("listing derived VMs: %w", err)
			return false, nil
		}
		ready := map[string]*kubevirtv1.VirtualMachine{} // by the owning Pod's UID
		for i := range vms.Items {
			vm := &vms.Items[i]
			if derive.IsDerivedFrom(vm, demoNamespace, proto) && vm.DeletionTimestamp == nil && vm.Status.Ready {
				ready[vm.Annotations[contract.AnnotationPodUID]] = vm
			}
		}
		var live []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				live = append(live, p)
			}
		}
		pairs, missing = pairs[:0], ""
		var unpaired []string
		for _, p := range live {
			vm, ok := ready[string(p.UID)]
			// The VM must run where its Pod runs: that is what the workload's
			// placement means for the VMs. The Pod's readiness is the agent
			// reporting the VM's, so status shows 1/1 once this returns.
			if !ok || p.Spec.NodeName == "" || testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) != p.Spec.NodeName || !podReady(&p) {
				unpaired = append(unpaired, p.Name)
				continue
			}
			pairs = append(pairs, fmt.Sprintf("  %-6s  pod %-32s  vm %s", p.Spec.NodeName, p.Name, vm.Name))
		}
		switch {
		case len(live) != want:
			missing = fmt.Sprintf("%d agent Pods, want %d", len(live), want)
		case len(unpaired) > 0:
			missing = "not yet Ready with a ready VM pinned to its node: " + strings.Join(unpaired, ", ")
		}
		return missing == "", nil
	})
	if missing == "" && listErr != nil {
		missing = listErr.Error()
	}
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%d agent Pods of %s with ready VMs: not there after %s (last seen: %s); see the kubelet and virt-controller lines above and `kubectl get pods,vm`",
			want, instance, r.timeout, missing)
	}
	if err != nil {
		return fmt.Errorf("waiting for %d agent Pods of %s with ready VMs: %w (last seen: %s)", want, instance, err, missing)
	}
	sort.Strings(pairs)
	r.printf("ready after %s:\n%s\n", time.Since(begin).Round(100*time.Millisecond), strings.Join(pairs, "\n"))
	return nil
}

// podReady reports whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
