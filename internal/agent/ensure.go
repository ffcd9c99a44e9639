package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// requestTimeout bounds a create or delete. These run detached from the
// shutdown signal so the agent always learns whether the VM exists.
const requestTimeout = 30 * time.Second

// ensure makes sure the derived VM exists and is this Pod's, retrying with
// capped backoff until it is. It returns nil only when ctx is done.
func (a *Agent) ensure(ctx context.Context) *kubevirtv1.VirtualMachine {
	if !a.cfg.pinned() {
		// The Pod's template is fixed for its life: no retry can pin a
		// revision, only a new Pod can. Say so once and make no VM.
		a.report.fail(ctx, a.notPinned())
		klog.FromContext(ctx).Info("Waiting for the Pod to be replaced by one that pins a VM revision")
		<-ctx.Done()
		return nil
	}
	b := a.cfg.backoff()
	for {
		vm, seen, err := a.tryEnsure(ctx)
		if vm != nil {
			return vm
		}
		if ctx.Err() != nil {
			return nil
		}
		var p *problem
		if !errors.As(err, &p) {
			p = &problem{reason: ReasonCreateFailed, msg: err.Error(), err: err}
		}
		a.report.fail(ctx, p)
		// Retrying cannot help while the revision the VM derives from is
		// missing or cannot be derived: wait for someone to change the
		// revision store. Without leave to watch it, poll like any other.
		if seen != nil && a.waitStoreChange(ctx, *seen) {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		if !sleep(ctx, b.Step()) {
			return nil
		}
	}
}

// sourceSeen is the revision store the VM derives from as an attempt that
// failed on it saw it: its resourceVersion, or "" when it did not exist.
type sourceSeen struct{ resourceVersion string }

// changedTo reports whether an object of resourceVersion rv, or none
// (!exists), is other than s.
func (s sourceSeen) changedTo(exists bool, rv string) bool {
	if !exists {
		return s.resourceVersion != ""
	}
	// Older than seen is the API server's cache lagging, not a change.
	c, err := resourceversion.CompareResourceVersion(rv, s.resourceVersion)
	return err != nil || c > 0
}

// tryEnsure makes one attempt: read the VM revision the Pod pins (pinnedRevision),
// derive, CREATE, and on a name clash adopt, replace or refuse the VM
// found. When it failed because that is missing or cannot be derived, it
// says how it saw the store, for waitStoreChange.
func (a *Agent) tryEnsure(ctx context.Context) (vm *kubevirtv1.VirtualMachine, seen *sourceSeen, err error) {
	protoRef := a.cfg.PrototypeNamespace + "/" + a.cfg.Prototype
	proto, seen, err := a.pinnedRevision(ctx)
	if err != nil {
		return nil, seen, err
	}
	want, err := derive.VM(proto, derive.Pod{
		Name: a.pod.PodName, Namespace: a.pod.PodNamespace, UID: a.pod.PodUID, Node: a.pod.Node,
	}, derive.Options{Namespace: a.cfg.Namespace, AllowSharedVolumes: a.cfg.AllowSharedVolumes, Subdomain: a.cfg.Subdomain,
		ReplicaClaims: a.cfg.ReplicaClaims, LauncherPriorityClass: a.cfg.LauncherPriorityClass, VMRevisionHash: a.cfg.VMRevisionHash})
	if err != nil {
		reason := ReasonInvalidPrototype
		if _, shared := errors.AsType[*derive.SharedVolumeError](err); shared {
			reason = ReasonSharedVolumes
		}
		// The prototype's own fix stays last, where it can be copied.
		msg := fmt.Sprintf("the Pod pins VM revision %s, a snapshot of the prototype: fix the prototype, then %s; %s", a.cfg.VMRevisionHash, a.repin(), err)
		return nil, seen, &problem{reason: reason, msg: msg, err: err}
	}
	ref := want.Namespace + "/" + want.Name
	from := fmt.Sprintf("VM revision %s of prototype %s", a.cfg.VMRevisionHash, protoRef)
	a.checkGracePeriod(ctx, want, protoRef)
	a.checkEvictionStrategy(ctx, proto)

	if mine, err := a.madeBefore(ctx, want); mine != nil || err != nil {
		return mine, nil, err
	}
	created, err := a.create(ctx, want)
	if err == nil {
		a.report.done(ctx, ReasonCreated, fmt.Sprintf("Created VM %s from %s on node %s", ref, from, a.pod.Node))
		a.took(MetricCreated)
		return created, nil, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, nil, createProblem(ref, err)
	}

	existing, err := a.vms.get(ctx, want.Namespace, want.Name)
	if err != nil {
		// Gone again already (NotFound) or unreachable: the next try sorts it out.
		return nil, nil, &problem{reason: ReasonCreateFailed, msg: fmt.Sprintf("VM %s exists but cannot be read: %v", ref, err), err: err}
	}
	v, why := judge(existing, a.pod, a.cfg.PrototypeNamespace, a.cfg.Prototype)
	klog.FromContext(ctx).V(1).Info("Found a VM with the derived name", "verdict", v, "uid", existing.UID)
	switch v {
	case adopt:
		a.report.done(ctx, ReasonAdopted, why)
		a.took(MetricAdopted)
		return existing, nil, nil
	case refuse:
		return nil, nil, &problem{reason: ReasonVMConflict, msg: why}
	}

	a.status.set(false, ReadyzReplacing)
	klog.FromContext(ctx).Info("Replacing VM", "reason", why, "uid", existing.UID, "podUID", derive.OriginOf(existing).PodUID)
	if err := a.deleteAndWait(ctx, existing); err != nil {
		return nil, nil, &problem{reason: ReasonDeleteFailed, msg: fmt.Sprintf("replacing VM %s: %v", ref, err), err: err}
	}
	created, err = a.create(ctx, want)
	if err != nil {
		return nil, nil, createProblem(ref, err)
	}
	a.report.done(ctx, ReasonReplaced, fmt.Sprintf("Replaced VM %s left by an earlier Pod %s (uid %s)",
		ref, a.pod.PodName, derive.OriginOf(existing).PodUID))
	a.took(MetricReplaced)
	return created, nil, nil
}

// madeBefore adopts the VM an agent already made for this Pod, under
// whatever name (a restarted agent container), as the Pod's record names
// it (record.go) or, without a record to trust, its first look finds it
// (findMade); nil when there is none. From then on the agent follows by
// name the VM it adopts, or want, which it is about to make: then it waits
// for that watch's first list too, so the watch is open before the CREATE.
// It says on /readyz and in an Event when the API server refuses either,
// and returns an error only when ctx ends first. Later attempts skip the
// look: since it, only this agent made VMs for the Pod.
func (a *Agent) madeBefore(ctx context.Context, want *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	ref := want.Namespace + "/" + want.Name
	report := func(err error) bool {
		a.report.fail(ctx, watchProblem(ref, err))
		return false // the reflector retries
	}
	if !a.looked {
		if rec := a.lookUpRecord(ctx); rec.known {
			a.looked = true
			if rec.name != "" {
				if mine, err := a.adoptRecorded(ctx, rec.name, report); mine != nil || err != nil {
					return mine, err
				}
			}
		}
	}
	if !a.looked {
		mine, err := a.findMade(ctx, want.Name, report)
		if err != nil {
			return nil, err
		}
		a.looked = true
		if mine != nil {
			a.followOwn(mine.Name)
			_, why := judge(mine, a.pod, a.cfg.PrototypeNamespace, a.cfg.Prototype)
			a.report.done(ctx, ReasonAdopted, why)
			a.took(MetricAdopted)
			return mine.DeepCopy(), nil
		}
	}
	return nil, a.followOwn(want.Name).wait(ctx, report, func() bool { return true })
}

// lookUpRecord reads the Pod's record of the VM its agents made. A state
// directory that does not exist is not looked at again: the agent keeps
// no record.
func (a *Agent) lookUpRecord(ctx context.Context) madeRecord {
	rec, err := readRecord(a.stateDir, a.pod.PodUID)
	if err != nil {
		klog.FromContext(ctx).Info("No record of the VM this Pod's agents made to trust; looking for it by label", "err", err)
		if errors.Is(err, fs.ErrNotExist) {
			a.stateDir = ""
		}
	}
	a.recorded = rec.name
	return rec
}

// adoptRecorded follows the VM called name, which the Pod's record says an
// agent of the Pod made, and adopts it if it is there and made for this
// Pod; nil when it is not. It waits for the watch's first list, and
// returns an error only when ctx ends first.
func (a *Agent) adoptRecorded(ctx context.Context, name string, report func(error) bool) (*kubevirtv1.VirtualMachine, error) {
	o := a.followOwn(name)
	var mine *kubevirtv1.VirtualMachine
	err := o.wait(ctx, report, func() bool {
		mine = made(o.store.List(), a.pod, a.cfg.PrototypeNamespace, a.cfg.Prototype, name)
		return true
	})
	if mine == nil || err != nil {
		return nil, err
	}
	_, why := judge(mine, a.pod, a.cfg.PrototypeNamespace, a.cfg.Prototype)
	a.report.done(ctx, ReasonAdopted, why)
	a.took(MetricAdopted)
	return mine.DeepCopy(), nil
}

// took counts the VM the agent now holds by reason; a VM made after someone
// deleted the last one counts as Recreated, however it came about.
func (a *Agent) took(reason string) {
	if a.vmLost && reason != MetricAdopted {
		reason = MetricRecreated
	}
	a.vmLost = false
	a.metrics.tookVM(reason, time.Now())
}

// create runs past the shutdown signal, up to the final deadline: a create
// cut short by the signal might still succeed, and the agent must know to
// delete it. When the final deadline cuts it short, the agent cannot know,
// and says so as it exits.
func (a *Agent) create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if err := a.recordMaking(vm.Name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(a.final, klog.FromContext(ctx)), requestTimeout)
	defer cancel()
	created, err := a.vms.create(ctx, vm)
	if err != nil && a.final.Err() != nil {
		a.cutShort = vm.Name
	}
	return created, err
}

// deleteAndWait deletes vm, precondition its UID, and waits until it is
// gone. A VM that is already gone, or whose name now belongs to another UID,
// counts as gone. The Pod's own VM watch sees the deletion of the VM it
// follows, by name, which a dead Pod's VM of the same name (replaced) is
// too; another VM gets a watch of its own, which starts with a list after
// the DELETE, so no deletion can slip past it.
//
// The VM goes only after its VMI, so the wait covers the guest's shutdown:
// KubeVirt's finalizer (kubevirt.io/virtualMachineControllerFinalize) keeps
// a deleted VM until virt-controller has stopped its VMI. The deletion is
// in the background: in the foreground, the garbage collector would delete
// the VMI and its launcher Pod too, each in the foreground, beside
// virt-controller: some 20 requests a VM from kube-controller-manager.
func (a *Agent) deleteAndWait(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	ref := klog.KObj(vm)
	opts := contract.VMDeleteOptions(vm.UID)
	b := a.cfg.backoff()
	for {
		dctx, cancel := context.WithTimeout(ctx, requestTimeout)
		err := a.vms.delete(dctx, vm.Namespace, vm.Name, opts)
		cancel()
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or the name is another VM's now (UID precondition failed).
			return nil
		}
		if err == nil {
			break
		}
		klog.FromContext(ctx).Info("Delete failed; will retry", "vm", ref, "err", err)
		if !sleep(ctx, b.Step()) {
			return fmt.Errorf("deleting VM %s: %w%s", ref, err, deniedHint(err, "delete on virtualmachines.kubevirt.io"))
		}
	}
	var err error
	if a.own != nil && a.own.follows(vm, a.cfg.Namespace) {
		// The Pod's own VM watch follows it already.
		err = a.own.wait(ctx, giveUp, func() bool {
			cur, reached := a.own.byUID(vm.UID, vm.ResourceVersion)
			return reached && cur == nil
		})
	} else {
		err = a.watchVM(ctx, vm.Namespace, vm.Name, giveUp, func(cur *kubevirtv1.VirtualMachine) bool {
			return cur == nil || cur.UID != vm.UID
		})
	}
	if err != nil {
		return fmt.Errorf("VM %s is still there: %w", ref, err)
	}
	return nil
}

func createProblem(ref string, err error) *problem {
	p := &problem{reason: ReasonCreateFailed, err: err, msg: fmt.Sprintf("creating VM %s: %v", ref, err)}
	if apierrors.IsAlreadyExists(err) {
		p.reason, p.msg = ReasonVMConflict, fmt.Sprintf("creating VM %s: another VM took the name; will look again", ref)
	}
	p.msg += deniedHint(err, "create on virtualmachines.kubevirt.io")
	return p
}

func watchProblem(ref string, err error) *problem {
	p := &problem{reason: ReasonWatchDenied, err: err, msg: fmt.Sprintf("watching VM %s: %v", ref, err)}
	if apierrors.IsForbidden(err) {
		p.msg += "; grant the Pod's service account list and watch on virtualmachines.kubevirt.io"
	}
	return p
}

// checkGracePeriod logs, once, when the guest may take longer to shut down
// than the agent waits for it on shutdown: the VM would outlive the Pod. It
// records no Event: the warning holds for every agent of the prototype, and
// scaffold and status say it once for all of them.
func (a *Agent) checkGracePeriod(ctx context.Context, vm *kubevirtv1.VirtualMachine, protoRef string) {
	if a.warnedGrace {
		return
	}
	if msg := derive.GracePeriodTooShort(vm, a.cfg.DeleteTimeout); msg != "" {
		a.warnedGrace = true
		klog.FromContext(ctx).Info("Grace period too short", "prototype", protoRef, "message", msg)
	}
}
