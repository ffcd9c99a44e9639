package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// onEvacuation watches vm's VMI until ctx ends and acts when KubeVirt
// marks the VMI for evacuation from this Pod's node. The derived VM's
// evictionStrategy is External, so an eviction of its launcher Pod, by a
// drain or by KubeVirt's workload updater after an upgrade, is refused and
// only sets status.evacuationNodeName. A DaemonSet's agent stops the VM
// (stopForEvacuation); any other evicts its own Pod (leaveForEvacuation).
func (a *Agent) onEvacuation(ctx context.Context, vm *kubevirtv1.VirtualMachine) {
	ref := vm.Namespace + "/" + vm.Name
	stopped := map[types.UID]bool{}
	leaving := false
	_ = a.watchVMI(ctx, vm.Namespace, vm.Name,
		func(err error) bool {
			a.report.fail(ctx, &problem{reason: ReasonWatchDenied, err: err,
				msg: fmt.Sprintf("watching VMI %s for evacuations: %v; grant the Pod's service account list and watch on virtualmachineinstances.kubevirt.io", ref, err)})
			return false
		},
		func(vmi *kubevirtv1.VirtualMachineInstance) bool {
			if vmi != nil {
				// Each state looked at, for debugging; tests wait for it
				// before they check that a state changed nothing.
				defer klog.FromContext(ctx).V(4).Info("Looked at the VMI for a drain", "resourceVersion", vmi.ResourceVersion, "evacuationNodeName", vmi.Status.EvacuationNodeName)
			}
			if vmi != nil && len(stopped) > 0 && !stopped[vmi.UID] && vmiReady(vmi) {
				a.vmiReplaced(ctx)
			}
			if vmi == nil || vmi.DeletionTimestamp != nil || stopped[vmi.UID] || leaving ||
				vmi.Status.EvacuationNodeName == "" || vmi.Status.EvacuationNodeName != a.pod.Node {
				return false
			}
			if a.cfg.EvictOnEvacuation {
				leaving = true
				go a.leaveForEvacuation(ctx, ref)
				return false
			}
			stopped[vmi.UID] = true
			if !a.stopForEvacuation(ctx, vmi, ref) {
				// The next change of the VMI, or the drain's next
				// eviction attempt, tries again.
				delete(stopped, vmi.UID)
			}
			return false
		})
}

// leaveForEvacuation evicts the agent's own Pod, so that the VM goes with
// it, paced by the workload's PodDisruptionBudget, and its controller's
// new Pod makes a VM in a launcher of KubeVirt's running release, on
// whatever node the scheduler picks. The agent stays Ready meanwhile: its
// VM still serves, and a Pod that turned not Ready would use up the
// budget its own eviction waits for.
func (a *Agent) leaveForEvacuation(ctx context.Context, ref string) {
	a.report.done(ctx, ReasonEvacuating, fmt.Sprintf("KubeVirt asked to evacuate VM %s from node %s (a drain, or a workload update after a KubeVirt upgrade); "+
		"evicting Pod %s, so that the VM goes with it under its PodDisruptionBudget and the new Pod's VM starts afresh", ref, a.pod.Node, a.podRef()))
	a.evictSelf(ctx, "to evacuate VM", func(ctx context.Context, msg string, _ error) {
		a.report.warn(ctx, ReasonEvacuationBlocked, msg)
	})
}

// stopForEvacuation stops the VM by deleting vmi, which gives the guest
// its grace period to shut down, and reports whether it did. The VM keeps
// runStrategy Always, so KubeVirt makes a new VMI at once, but its
// launcher Pod, pinned to this node, waits until the node takes Pods again
// (kubectl uncordon) and then runs the VM again: a drain ends with no VMI
// running on the node, and the agent's own Pod, which a drain with
// --ignore-daemonsets leaves alone, never restarts. After a KubeVirt
// upgrade, whose workload updater leaves the node schedulable, the new VMI
// starts at once, in a launcher of the running release.
func (a *Agent) stopForEvacuation(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, ref string) bool {
	a.evacuation.Store(evacuationStopping)
	a.status.set(false, ReadyzEvacuated)
	err := a.vmis.deleteVMI(ctx, vmi.Namespace, vmi.Name, contract.VMIDeleteOptions(vmi.UID))
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		a.report.done(ctx, ReasonEvacuated, fmt.Sprintf("KubeVirt asked to evacuate VM %s from node %s (a drain, or a workload update after a KubeVirt upgrade): stopped it by deleting its VMI (the guest gets its grace period); "+
			"KubeVirt starts it again on this node once the node takes Pods (kubectl uncordon after a drain)", ref, a.pod.Node))
		return true
	default:
		a.report.fail(ctx, &problem{reason: ReasonDeleteFailed, err: err,
			msg: fmt.Sprintf("stopping VM %s for the drain of node %s: deleting its VMI: %v%s", ref, a.pod.Node, err,
				deniedHint(err, "delete on virtualmachineinstances.kubevirt.io"))})
		return false
	}
}

// vmiReplaced notes that a VMI other than the one stopped for the drain is
// ready: the VM went down and is up again, whether or not the agent saw its
// status say so in between. A watch that lists again after an API server or
// etcd restart delivers only the latest state, and KubeVirt may not write
// the VM's status between two VMIs at all.
func (a *Agent) vmiReplaced(ctx context.Context) {
	a.observing.Lock()
	defer a.observing.Unlock()
	if a.evacuation.CompareAndSwap(evacuationStopping, evacuationDown) {
		if cur := a.latest.Load(); cur != nil {
			a.observeLocked(ctx, cur)
		}
	}
}

// vmiReady is the VMI's Ready condition, which KubeVirt mirrors in its VM's
// status.ready.
func vmiReady(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkEvictionStrategy logs, once, that the prototype asked for another
// eviction strategy than the External one every derived VM gets. Like
// checkGracePeriod, it records no Event.
func (a *Agent) checkEvictionStrategy(ctx context.Context, proto *kubevirtv1.VirtualMachine) {
	if a.warnedEviction {
		return
	}
	if msg := derive.EvictionStrategyOverridden(proto); msg != "" {
		a.warnedEviction = true
		klog.FromContext(ctx).Info("Eviction strategy overridden", "prototype", klog.KObj(proto), "message", msg)
	}
}
