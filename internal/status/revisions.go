package status

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// retryRevise is how long Watch keeps a prototype's revision it could not
// take before it asks KubeVirt again; one it took it keeps until the
// prototype changes.
const retryRevise = time.Minute

// reviser takes the revision each prototype would pin now
// (prototype.Revise: no request but KubeVirt's expansion, for a prototype
// with an instancetype or preference), for the prototypes agent Pods that
// pin a revision name, into Inventory.Revisions. It keeps what it took by
// the prototype's UID and resourceVersion, so Watch asks once per change.
type reviser struct {
	expand kube.Expander
	taken  map[types.NamespacedName]taken
}

type taken struct {
	uid             types.UID
	resourceVersion string
	hash            string
	err             error
	at              time.Time
}

func newReviser(expand kube.Expander) *reviser {
	return &reviser{expand: expand, taken: map[types.NamespacedName]taken{}}
}

// revise fills inv.Revisions. A revision it cannot take is left out, and
// status then says nothing of it: it is logged at -v=2.
func (r *reviser) revise(ctx context.Context, inv *Inventory, now time.Time) {
	if r.expand == nil {
		return
	}
	wanted := pinnedPrototypes(inv)
	for _, proto := range inv.Prototypes {
		k := types.NamespacedName{Namespace: proto.Namespace, Name: proto.Name}
		if !wanted[k] {
			continue
		}
		t, ok := r.taken[k]
		if !ok || t.uid != proto.UID || t.resourceVersion != proto.ResourceVersion || (t.err != nil && now.Sub(t.at) >= retryRevise) {
			t = taken{uid: proto.UID, resourceVersion: proto.ResourceVersion, at: now}
			_, t.hash, t.err = prototype.Revise(ctx, r.expand, proto)
			if t.err != nil {
				klog.FromContext(ctx).V(2).Info("Cannot tell whether the prototype changed since its workloads pinned it", "prototype", klog.KObj(proto), "err", t.err)
			}
			r.taken[k] = t
		}
		if t.err == nil {
			if inv.Revisions == nil {
				inv.Revisions = map[types.NamespacedName]string{}
			}
			inv.Revisions[k] = t.hash
		}
	}
}

// pinnedPrototypes are the prototypes of the agent Pods inv shows that pin
// a VM revision.
func pinnedPrototypes(inv *Inventory) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for _, p := range inv.Pods {
		if a, ok := shownAgent(inv.Query, p); ok && p.Annotations[contract.AnnotationVMRevision] != "" {
			out[types.NamespacedName{Namespace: a.PrototypeNamespace, Name: a.Prototype}] = true
		}
	}
	return out
}

// shownAgent is what pod's agent arguments say, when pod is an agent Pod
// that q shows.
func shownAgent(q Query, pod *corev1.Pod) (contract.Agent, bool) {
	a, ok := contract.ParseAgent(pod)
	return a, ok && q.InScope(pod.Namespace) && (q.Prototype == "" || a.Prototype == q.Prototype)
}

// pinnedBy is the VM revision a row is judged by: the one its Pod's
// template pins, or, without a Pod, the one its VM was derived from. It is
// "" for a Pod that pins none, whose agent makes no VM (notPinned).
func pinnedBy(pod *corev1.Pod, vm *kubevirtv1.VirtualMachine) string {
	if pod != nil {
		return pod.Annotations[contract.AnnotationVMRevision]
	}
	return vm.Annotations[contract.AnnotationVMRevision]
}

// notPinned names, for a live agent Pod of a workload whose template pins
// no VM revision, the stuck state its agent reports (stuck.NotPinned) and
// the rollout that pins it; "" for any other Pod. A Pod of no workload (an
// agent run by hand) has no rollout to pin it: its agent's /readyz and
// Event say what to do.
func notPinned(pod *corev1.Pod) string {
	if pod == nil || pod.DeletionTimestamp != nil || pod.Annotations[contract.AnnotationVMRevision] != "" {
		return ""
	}
	a, ok := contract.ParseAgent(pod)
	if _, isWorkload := workloadOf(pod); !ok || !isWorkload {
		return ""
	}
	return fmt.Sprintf(problemNotPinnedFmt, stuck.NotPinned, a.Prototype)
}

// workloadOf names the workload whose Pod pod is, as kubectl names it:
// "deployment.apps/web" for a Pod of a Deployment's ReplicaSet (named
// <deployment>-<pod-template-hash>), "statefulset.apps/db",
// "daemonset.apps/node-vm". It reports false for a Pod of no Deployment,
// StatefulSet or DaemonSet.
func workloadOf(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || !strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") {
		return "", false
	}
	switch ref.Kind {
	case "ReplicaSet":
		hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		name, ok := strings.CutSuffix(ref.Name, "-"+hash)
		if hash == "" || !ok {
			return "", false // a ReplicaSet of no Deployment
		}
		return "deployment.apps/" + name, true
	case "StatefulSet":
		return "statefulset.apps/" + ref.Name, true
	case "DaemonSet":
		return "daemonset.apps/" + ref.Name, true
	}
	return "", false
}
