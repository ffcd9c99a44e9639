package agent

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// vmWatch follows one VM by name with a single watch. It resumes a dropped
// watch from the last resourceVersion it saw and, when that version is too
// old (410 Gone), GETs the VM once and carries on from there: client-go's
// RetryWatcher plus the re-GET RetryWatcher leaves to its caller. It never
// LISTs and never watches more than the one name.
type vmWatch struct {
	api             vmAPI
	namespace, name string
	rv              string

	w        watch.Interface
	gotEvent bool // the current watch delivered something, so a close is routine
	retry    bool // the last attempt failed: wait before the next
	initial  wait.Backoff
	backoff  wait.Backoff
	logger   klog.Logger
}

func newVMWatch(ctx context.Context, api vmAPI, namespace, name, resourceVersion string, backoff wait.Backoff) *vmWatch {
	return &vmWatch{
		api: api, namespace: namespace, name: name, rv: resourceVersion,
		initial: backoff, backoff: backoff,
		logger: klog.FromContext(ctx).WithValues("watch", klog.KRef(namespace, name)),
	}
}

// open starts the watch unless one runs. Callers about to change the VM
// open first, so the change cannot slip past.
func (vw *vmWatch) open(ctx context.Context) error {
	if vw.w != nil {
		return nil
	}
	w, err := vw.api.watch(ctx, vw.namespace, vw.name, vw.rv)
	if err != nil {
		return err
	}
	vw.w, vw.gotEvent = w, false
	return nil
}

// next returns the VM's next state: Added or Modified with the object, or
// Deleted with the object (nil when a re-GET found nothing). ok is false once
// ctx is done.
func (vw *vmWatch) next(ctx context.Context) (typ watch.EventType, vm *kubevirtv1.VirtualMachine, ok bool) {
	for ctx.Err() == nil {
		if vw.w == nil {
			if vw.retry && !sleep(ctx, vw.backoff.Step()) {
				break
			}
			if err := vw.open(ctx); err != nil {
				if isExpired(err) {
					return vw.relist(ctx)
				}
				vw.logger.V(1).Info("Watch failed; will retry", "resourceVersion", vw.rv, "err", err)
				vw.retry = true
				continue
			}
		}
		var ev watch.Event
		select {
		case <-ctx.Done():
			continue
		case ev, ok = <-vw.w.ResultChan():
		}
		if !ok {
			// The server ends watches now and then; resume at once unless
			// this one ended without saying anything.
			vw.logger.V(1).Info("Watch closed; resuming", "resourceVersion", vw.rv)
			vw.retry = !vw.gotEvent
			vw.drop()
			continue
		}
		switch ev.Type {
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			vw.drop()
			if isExpired(err) {
				return vw.relist(ctx)
			}
			vw.logger.V(1).Info("Watch error; resuming", "resourceVersion", vw.rv, "err", err)
			vw.retry = true
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				vw.rv = m.GetResourceVersion()
			}
			vw.gotEvent = true
		case watch.Added, watch.Modified, watch.Deleted:
			obj, isVM := ev.Object.(*kubevirtv1.VirtualMachine)
			// The server filters by name already; this keeps fakes honest.
			if !isVM || obj.Name != vw.name || obj.Namespace != vw.namespace {
				continue
			}
			if obj.ResourceVersion != "" {
				vw.rv = obj.ResourceVersion
			}
			vw.gotEvent, vw.retry, vw.backoff = true, false, vw.initial
			return ev.Type, obj, true
		}
	}
	return "", nil, false
}

// relist GETs the VM after the watch fell too far behind.
func (vw *vmWatch) relist(ctx context.Context) (watch.EventType, *kubevirtv1.VirtualMachine, bool) {
	vw.logger.V(1).Info("Watch expired; getting the VM again", "resourceVersion", vw.rv)
	for {
		vm, err := vw.api.get(ctx, vw.namespace, vw.name)
		switch {
		case err == nil:
			vw.rv, vw.retry = vm.ResourceVersion, false
			return watch.Modified, vm, true
		case apierrors.IsNotFound(err):
			// Nothing to resume from: a later watch starts from now.
			vw.rv, vw.retry = "", false
			return watch.Deleted, nil, true
		case ctx.Err() != nil:
			return "", nil, false
		}
		vw.logger.V(1).Info("Get failed; will retry", "err", err)
		if !sleep(ctx, vw.backoff.Step()) {
			return "", nil, false
		}
	}
}

func (vw *vmWatch) drop() {
	if vw.w != nil {
		vw.w.Stop()
		vw.w = nil
	}
}

// stop ends the watch.
func (vw *vmWatch) stop() { vw.drop() }

func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}
