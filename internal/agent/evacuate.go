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

// stopOnEvacuation watches vm's VMI until ctx ends and stops the VM when
// KubeVirt marks the VMI for evacuation from this Pod's node: the derived
// VM's evictionStrategy is External, so a drain's eviction of the launcher
// Pod is refused and only sets status.evacuationNodeName.
//
// It stops the VM by deleting the VMI, which gives the guest its grace
// period to shut down. The VM keeps runStrategy Always, so KubeVirt makes a
// new VMI at once, but its launcher Pod, pinned to this node, waits until
// the node takes Pods again (kubectl uncordon) and then runs the VM again:
// the drain ends with no VMI running on the node, and the agent's own Pod,
// which a drain with --ignore-daemonsets leaves alone, never restarts.
func (a *Agent) stopOnEvacuation(ctx context.Context, vm *kubevirtv1.VirtualMachine) {
	ref := vm.Namespace + "/" + vm.Name
	stopped := map[types.UID]bool{}
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
			if vmi == nil || vmi.DeletionTimestamp != nil || stopped[vmi.UID] ||
				vmi.Status.EvacuationNodeName == "" || vmi.Status.EvacuationNodeName != a.pod.Node {
				return false
			}
			stopped[vmi.UID] = true
			a.evacuation.Store(evacuationStopping)
			a.status.set(false, ReadyzEvacuated)
			err := a.vmis.deleteVMI(ctx, vmi.Namespace, vmi.Name, contract.VMIDeleteOptions(vmi.UID))
			switch {
			case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
				a.report.done(ctx, ReasonEvacuated, fmt.Sprintf("Node %s is being drained: stopped VM %s by deleting its VMI (the guest gets its grace period); "+
					"KubeVirt starts it again on this node once the node takes Pods (kubectl uncordon)", a.pod.Node, ref))
			default:
				// The next change of the VMI, or the drain's next eviction
				// attempt, tries again.
				delete(stopped, vmi.UID)
				a.report.fail(ctx, &problem{reason: ReasonDeleteFailed, err: err,
					msg: fmt.Sprintf("stopping VM %s for the drain of node %s: deleting its VMI: %v%s", ref, a.pod.Node, err,
						deniedHint(err, "delete on virtualmachineinstances.kubevirt.io"))})
			}
			return false
		})
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
