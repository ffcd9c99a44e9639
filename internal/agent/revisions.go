package agent

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// pinnedRevision reads, with one GET of the workload's revision store, the
// VM revision the Pod's template pins: the snapshot of the prototype the
// agent derives its VM from. The live prototype is not read: the workload
// keeps making its VMs from what its template says, whatever became of the
// prototype since, and even while it is deleted.
//
// A store that does not exist, cannot be read, or lacks the revision is
// stuck.ReasonRevisionMissing, and one that holds it rewritten
// stuck.ReasonRevisionRewritten, which only a rollout fixes: seen then
// says how the store was, for waitStoreChange. A store that cannot be got is a
// problem retried after the backoff.
func (a *Agent) pinnedRevision(ctx context.Context) (*kubevirtv1.VirtualMachine, *sourceSeen, error) {
	ns, name, hash := a.pod.PodNamespace, a.cfg.StoreName, a.cfg.VMRevisionHash
	ref := ns + "/" + name
	cr, err := a.revs.getRevisions(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, &sourceSeen{}, a.revisionMissing(
			fmt.Sprintf("revision %s is not in VMRevisionStore %s, which does not exist: it was deleted or never rolled out", hash, ref), err)
	}
	if err != nil {
		return nil, nil, storeProblem(ref, ns, name, hash, err)
	}
	seen := &sourceSeen{resourceVersion: cr.GetResourceVersion()}
	store, err := revision.FromObject(cr)
	if err != nil {
		return nil, seen, a.revisionMissing(fmt.Sprintf("revision %s cannot be read: %v", hash, err), err)
	}
	r := store.Revisions[hash]
	if r == nil {
		return nil, seen, a.revisionMissing(
			fmt.Sprintf("revision %s is not in VMRevisionStore %s: it was pruned or never rolled out", hash, ref), nil)
	}
	// What the store holds under the hash is what the template pinned
	// only if it hashes so: the create policy cannot hash, and would
	// admit a VM of whatever the store holds.
	if err := store.Verify(hash); err != nil {
		return nil, seen, &problem{reason: stuck.ReasonRevisionRewritten, err: err, msg: fmt.Sprintf("%s: %v", stuck.RevisionRewritten, err)}
	}
	if r.Name != a.cfg.Prototype || r.Namespace != a.cfg.PrototypeNamespace {
		// Its VM would have another name than the agent's, and another
		// prototype's marks: a template edited by hand.
		return nil, seen, &problem{reason: ReasonInvalidPrototype, msg: fmt.Sprintf(
			"VM revision %s in VMRevisionStore %s is a snapshot of prototype %s/%s, not of %s/%s, which the agent's arguments name; %s",
			hash, ref, r.Namespace, r.Name, a.cfg.PrototypeNamespace, a.cfg.Prototype, a.repin())}
	}
	return r, seen, nil
}

// revisionMissing is the problem of a Pod whose pinned revision the store
// lacks: what is wrong, then what to do.
func (a *Agent) revisionMissing(what string, err error) *problem {
	return &problem{reason: stuck.ReasonRevisionMissing, err: err, msg: fmt.Sprintf("%s: %s; %s, "+
		"or `kubectl rollout undo` to a template whose revision is retained", stuck.RevisionMissing, what, a.repin())}
}

// notPinned is the problem of a Pod whose template pins no VM revision
// (contract.EnvVMRevision unset): a template written or edited by hand,
// which only a rollout or scaffold's output pins.
func (a *Agent) notPinned() *problem {
	return &problem{reason: stuck.ReasonNotPinned, msg: fmt.Sprintf("%s: the Pod's template names none (annotation %s, env %s), "+
		"and the agent derives VMs only from a revision its workload rolled out, never from the live prototype; %s, "+
		"or apply `kubectl vmctl scaffold`'s output for the workload again",
		stuck.NotPinned, contract.AnnotationVMRevision, contract.EnvVMRevision, a.repin())}
}

// repin says how the Pod's workload gets a new revision of its prototype.
func (a *Agent) repin() string {
	return fmt.Sprintf("`kubectl vmctl rollout restart %s -n %s` pins a new one", a.cfg.Prototype, a.pod.PodNamespace)
}

func storeProblem(ref, namespace, name, hash string, err error) *problem {
	p := &problem{reason: ReasonRevisionUnavailable, err: err, msg: fmt.Sprintf("reading VM revision %s from VMRevisionStore %s: %v", hash, ref, err)}
	if apierrors.IsForbidden(err) {
		p.msg = fmt.Sprintf("reading VM revision %s from VMRevisionStore %s: forbidden; "+
			"grant the Pod's service account get, list and watch on vmrevisionstores.vmctl.kubevirt.io named %s in namespace %s", hash, ref, name, namespace)
	}
	return p
}

// waitStoreChange waits, with one watch narrowed to the revision store's
// name, until the store is other than seen: made, replaced (a rollout
// adds its revision) or deleted. It reports false, at once, when the store
// cannot be watched: the caller then polls.
func (a *Agent) waitStoreChange(ctx context.Context, seen sourceSeen) bool {
	ns, name := a.pod.PodNamespace, a.cfg.StoreName
	list, watchFn := a.storeOf(ns, name)
	err := watchOne(ctx, a, ns, name, &unstructured.Unstructured{}, giveUp, func(cur *unstructured.Unstructured) bool {
		if cur == nil {
			return seen.changedTo(false, "")
		}
		return seen.changedTo(true, cur.GetResourceVersion())
	}, list, watchFn)
	if kube.Refused(err) {
		klog.FromContext(ctx).V(1).Info("Cannot watch the VM revision store; polling it instead", "store", klog.KRef(ns, name), "err", err)
		return false
	}
	return true
}

// storeOf lists and watches, for a Reflector, the one VMRevisionStore
// namespace/name.
func (a *Agent) storeOf(namespace, name string) (
	func(context.Context, metav1.ListOptions) (runtime.Object, error),
	func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return a.revs.listRevisions(ctx, namespace, name, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return a.revs.watchRevisions(ctx, namespace, name, opts)
		}
}
