package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// fakeAPI stands in for the API server's VirtualMachine endpoints (and the
// VMI and VMRevisionStore ones the agent uses) in unit tests, with the resourceVersion rules of its watch cache that client-go's
// fake clientsets lack (they ignore resourceVersion and sendInitialEvents):
//
//   - every write takes the next resourceVersion;
//   - a watch from a resourceVersion older than cacheStart gets 410 Gone as
//     its first and only event, as the watch cache answers once its window
//     moved past that version or after an API server restart;
//   - a watch with sendInitialEvents streams the current state and then a
//     bookmark that ends the initial events, as a streaming list does;
//   - restart ends every watch and moves cacheStart to the current version;
//     while down, requests fail with "connection refused" and do not count.
//
// It counts every request that reaches it. The end-to-end tests check the
// same rules against the real API server.
type fakeAPI struct {
	t *testing.T

	mu         sync.Mutex
	rev        int64
	cacheStart int64
	vms        map[string]*kubevirtv1.VirtualMachine // by name; one namespace
	vmis       map[string]*kubevirtv1.VirtualMachineInstance
	revisions  map[string]*unstructured.Unstructured // revision stores, by name
	history    []watch.Event                         // every change, oldest first
	watches    map[*fakeWatch]bool
	requests   []string
	uids       int
	down       bool
	// holdDeletes keeps a deleted VM, with a deletionTimestamp, until
	// finishDelete, as KubeVirt's finalizer keeps it until its VMI is gone.
	holdDeletes bool
	// fail, when set, may answer a request (as it is recorded) with an error.
	fail func(request string) error
	// stallCreates makes every create wait until its context ends, as an
	// API server that never answers.
	stallCreates bool
	// onDelete, when set, hears the options of every DELETE.
	onDelete func(metav1.DeleteOptions)
	// created, when set, hears every VM made, once the create is done, as
	// KubeVirt's controllers would.
	created func(*kubevirtv1.VirtualMachine)

	// seen gets every request as it arrives, for tests that wait on one.
	seen chan string
	// timeouts holds the timeoutSeconds of every VM watch, in order.
	timeouts []int64
}

func newFakeAPI(t *testing.T, vms ...*kubevirtv1.VirtualMachine) *fakeAPI {
	f := &fakeAPI{
		t: t, rev: 10, vms: map[string]*kubevirtv1.VirtualMachine{}, vmis: map[string]*kubevirtv1.VirtualMachineInstance{},
		revisions: map[string]*unstructured.Unstructured{},
		watches:   map[*fakeWatch]bool{}, seen: make(chan string, 1000),
	}
	for _, vm := range vms {
		f.put(vm)
	}
	return f
}

// record notes a request and returns the error fail gives it, or the
// refused connection of an API server that is down.
func (f *fakeAPI) record(req string) error {
	if f.down {
		return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	}
	f.requests = append(f.requests, req)
	select {
	case f.seen <- req:
	default:
		f.t.Errorf("fakeAPI: more than %d requests unread", cap(f.seen))
	}
	if f.fail != nil {
		return f.fail(req)
	}
	return nil
}

func (f *fakeAPI) get(_ context.Context, _, name string) (*kubevirtv1.VirtualMachine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("get " + name); err != nil {
		return nil, err
	}
	vm, ok := f.vms[name]
	if !ok {
		return nil, apierrors.NewNotFound(vmResource.GroupResource(), name)
	}
	return vm.DeepCopy(), nil
}

func (f *fakeAPI) create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	made, err := f.makeVM(ctx, vm)
	if err == nil && f.created != nil {
		f.created(made.DeepCopy())
	}
	return made, err
}

// makeVM stores the VM create makes.
func (f *fakeAPI) makeVM(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("create " + vm.Name); err != nil {
		return nil, err
	}
	if f.stallCreates {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return nil, ctx.Err()
	}
	if _, ok := f.vms[vm.Name]; ok {
		return nil, apierrors.NewAlreadyExists(vmResource.GroupResource(), vm.Name)
	}
	vm = vm.DeepCopy()
	f.uids++
	vm.UID = types.UID(fmt.Sprintf("created-uid-%d", f.uids))
	f.store(watch.Added, vm)
	return vm.DeepCopy(), nil
}

func (f *fakeAPI) delete(_ context.Context, _, name string, opts metav1.DeleteOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("delete " + name); err != nil {
		return err
	}
	if f.onDelete != nil {
		f.onDelete(opts)
	}
	vm, ok := f.vms[name]
	if !ok {
		return apierrors.NewNotFound(vmResource.GroupResource(), name)
	}
	if p := opts.Preconditions; p != nil && p.UID != nil && *p.UID != vm.UID {
		return apierrors.NewConflict(vmResource.GroupResource(), name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, vm.UID))
	}
	if vm.DeletionTimestamp != nil {
		return nil // already going
	}
	if f.holdDeletes {
		vm = vm.DeepCopy()
		vm.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		vm.Finalizers = append(vm.Finalizers, metav1.FinalizerDeleteDependents)
		f.store(watch.Modified, vm)
		return nil
	}
	f.remove(name)
	return nil
}

func (f *fakeAPI) list(_ context.Context, _ string, sel kube.Selector, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	what, matches := f.selection(sel)
	if err := f.record(fmt.Sprintf("list %s rv=%s", what, opts.ResourceVersion)); err != nil {
		return nil, err
	}
	list := &kubevirtv1.VirtualMachineList{ListMeta: metav1.ListMeta{ResourceVersion: f.version()}}
	for _, vm := range f.selected(matches) {
		list.Items = append(list.Items, *vm.DeepCopy())
	}
	return list, nil
}

func (f *fakeAPI) watch(_ context.Context, _ string, sel kube.Selector, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	what, matches := f.selection(sel)
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	req := fmt.Sprintf("watch %s rv=%s", what, opts.ResourceVersion)
	if initial {
		req += " initial"
	}
	if err := f.record(req); err != nil {
		return nil, err
	}
	f.timeouts = append(f.timeouts, ptr.Deref(opts.TimeoutSeconds, 0))
	w := &fakeWatch{name: what, matches: matches, ch: make(chan watch.Event, 1000), bookmarks: opts.AllowWatchBookmarks}
	rv, _ := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	switch {
	case initial:
		// A streaming list: the state now, then the bookmark that ends it.
		for _, vm := range f.selected(matches) {
			w.send(watch.Event{Type: watch.Added, Object: vm.DeepCopy()})
		}
		w.send(watch.Event{Type: watch.Bookmark, Object: &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: f.version(),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}})
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		for _, vm := range f.selected(matches) {
			w.send(watch.Event{Type: watch.Added, Object: vm.DeepCopy()})
		}
	case rv < f.cacheStart:
		// What the watch cache answers: a 200 whose only event is the 410.
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, f.cacheStart)).Status()
		w.send(watch.Event{Type: watch.Error, Object: &status})
		w.end()
		return w, nil
	default:
		for _, ev := range f.history {
			if objectRV(ev.Object) > rv && w.wants(ev) {
				w.send(ev)
			}
		}
	}
	f.watches[w] = true
	return w, nil
}

// selection names what sel selects in the request log (a VM's name, or the
// label selector as written) and matches the VMs it selects: by name, or by
// labels. A VM relabelled out of a label selection is not reported as
// deleted, as the API server would; no test relabels one.
func (f *fakeAPI) selection(sel kube.Selector) (string, func(*kubevirtv1.VirtualMachine) bool) {
	if name, ok := strings.CutPrefix(sel.Field, "metadata.name="); ok && sel.Label == "" {
		return name, func(vm *kubevirtv1.VirtualMachine) bool { return vm.Name == name }
	}
	ls, err := labels.Parse(sel.Label)
	if err != nil || sel.Field != "" {
		f.t.Errorf("fakeAPI: selector %+v is neither one name nor labels", sel)
		return sel.Label, func(*kubevirtv1.VirtualMachine) bool { return false }
	}
	return sel.Label, func(vm *kubevirtv1.VirtualMachine) bool { return ls.Matches(labels.Set(vm.Labels)) }
}

// selected returns the stored VMs that matches selects, by name.
func (f *fakeAPI) selected(matches func(*kubevirtv1.VirtualMachine) bool) []*kubevirtv1.VirtualMachine {
	var out []*kubevirtv1.VirtualMachine
	for _, name := range slices.Sorted(maps.Keys(f.vms)) {
		if vm := f.vms[name]; matches(vm) {
			out = append(out, vm)
		}
	}
	return out
}

// put stores vm as it is (a create or an update by someone else, such as
// KubeVirt writing the status), at the next resourceVersion.
func (f *fakeAPI) put(vm *kubevirtv1.VirtualMachine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	typ := watch.Modified
	if _, ok := f.vms[vm.Name]; !ok {
		typ = watch.Added
	}
	f.store(typ, vm.DeepCopy())
}

// removeVM deletes a VM at once, as someone else would.
func (f *fakeAPI) removeVM(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remove(name)
}

// finishDelete ends a held deletion: the VMI is gone, so is the VM.
func (f *fakeAPI) finishDelete(name string) { f.removeVM(name) }

// setHoldDeletes sets holdDeletes while the agent runs.
func (f *fakeAPI) setHoldDeletes(hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdDeletes = hold
}

// object returns a copy of a stored VM, or nil.
func (f *fakeAPI) object(name string) *kubevirtv1.VirtualMachine {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vm, ok := f.vms[name]; ok {
		return vm.DeepCopy()
	}
	return nil
}

// churn makes n changes to a VM no agent watches and moves cacheStart past
// all of them, as a busy namespace moves the watch cache's window.
func (f *fakeAPI) churn(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range n {
		vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
			Name: "busy", Namespace: testNamespace, UID: "busy-uid", Labels: map[string]string{"n": strconv.Itoa(i)}}}
		f.store(watch.Modified, vm)
	}
	f.cacheStart = f.rev
}

// restart ends every watch, refuses requests for down, and comes back with
// a watch cache that starts at the current resourceVersion: every older one
// gets 410 Gone. meanwhile, when not nil, runs while it is down (the store
// is etcd's, which does not go down with the API server).
func (f *fakeAPI) restart(down time.Duration, meanwhile func()) {
	f.mu.Lock()
	f.down = true
	for w := range f.watches {
		w.end()
	}
	clear(f.watches)
	f.mu.Unlock()
	if meanwhile != nil {
		meanwhile()
	}
	time.Sleep(down)
	f.mu.Lock()
	f.down = false
	f.cacheStart = f.rev
	f.mu.Unlock()
}

// closeWatches ends every open watch, as the server does now and then.
func (f *fakeAPI) closeWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watches {
		w.end()
	}
	clear(f.watches)
}

// watching reports whether a watch of name is open.
func (f *fakeAPI) watching(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watches {
		if w.name == name && w.open() {
			return true
		}
	}
	return false
}

// bookmark sends a bookmark at the current resourceVersion to every watch
// that asked for them, as the API server does about once a minute.
func (f *fakeAPI) bookmark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watches {
		if !w.bookmarks {
			continue
		}
		meta := metav1.ObjectMeta{ResourceVersion: f.version()}
		if w.revisions {
			b := &unstructured.Unstructured{}
			b.SetResourceVersion(meta.ResourceVersion)
			w.send(watch.Event{Type: watch.Bookmark, Object: b})
			continue
		}
		w.send(watch.Event{Type: watch.Bookmark, Object: &kubevirtv1.VirtualMachine{ObjectMeta: meta}})
	}
}

// requestLog returns the requests so far, in order.
func (f *fakeAPI) requestLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// count returns how many requests so far start with prefix.
func (f *fakeAPI) count(prefix string) int {
	n := 0
	for _, r := range f.requestLog() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// next waits for the next request that starts with prefix and returns it.
func (f *fakeAPI) next(prefix string) string {
	f.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-f.seen:
			if strings.HasPrefix(r, prefix) {
				return r
			}
		case <-timeout:
			f.t.Fatalf("timed out waiting for a request %q; requests so far: %q", prefix, f.requestLog())
			return ""
		}
	}
}

func (f *fakeAPI) version() string { return strconv.FormatInt(f.rev, 10) }

// store writes vm at the next resourceVersion and tells the watches.
func (f *fakeAPI) store(typ watch.EventType, vm *kubevirtv1.VirtualMachine) {
	f.rev++
	vm.ResourceVersion = f.version()
	if vm.Namespace == "" {
		vm.Namespace = testNamespace
	}
	f.vms[vm.Name] = vm
	f.publish(watch.Event{Type: typ, Object: vm.DeepCopy()})
}

func (f *fakeAPI) remove(name string) {
	vm, ok := f.vms[name]
	if !ok {
		return
	}
	delete(f.vms, name)
	f.rev++
	gone := vm.DeepCopy()
	gone.ResourceVersion = f.version()
	f.publish(watch.Event{Type: watch.Deleted, Object: gone})
}

func (f *fakeAPI) publish(ev watch.Event) {
	f.history = append(f.history, ev)
	for w := range f.watches {
		if w.wants(ev) {
			w.send(ev)
		}
	}
}

// The VMI endpoints, without history: enough for the evacuation watch.

func (f *fakeAPI) listVMI(_ context.Context, _, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(fmt.Sprintf("list vmi %s rv=%s", name, opts.ResourceVersion)); err != nil {
		return nil, err
	}
	list := &kubevirtv1.VirtualMachineInstanceList{ListMeta: metav1.ListMeta{ResourceVersion: f.version()}}
	if vmi, ok := f.vmis[name]; ok {
		list.Items = append(list.Items, *vmi.DeepCopy())
	}
	return list, nil
}

func (f *fakeAPI) watchVMI(_ context.Context, _, name string, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(fmt.Sprintf("watch vmi %s rv=%s", name, opts.ResourceVersion)); err != nil {
		return nil, err
	}
	w := &fakeWatch{name: name, vmi: true, ch: make(chan watch.Event, 1000), bookmarks: opts.AllowWatchBookmarks}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		if vmi, ok := f.vmis[name]; ok {
			w.send(watch.Event{Type: watch.Added, Object: vmi})
		}
		w.send(watch.Event{Type: watch.Bookmark, Object: &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: f.version(),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}})
	}
	f.watches[w] = true
	return w, nil
}

func (f *fakeAPI) deleteVMI(_ context.Context, _, name string, opts metav1.DeleteOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("delete vmi " + name); err != nil {
		return err
	}
	vmi, ok := f.vmis[name]
	if !ok {
		return apierrors.NewNotFound(vmResource.GroupResource(), name)
	}
	if p := opts.Preconditions; p != nil && p.UID != nil && *p.UID != vmi.UID {
		return apierrors.NewConflict(vmResource.GroupResource(), name, errors.New("precondition failed"))
	}
	delete(f.vmis, name)
	f.rev++
	gone := vmi.DeepCopy()
	gone.ResourceVersion = f.version()
	f.publish(watch.Event{Type: watch.Deleted, Object: gone})
	return nil
}

// putVMI stores a VMI as KubeVirt would write it.
func (f *fakeAPI) putVMI(vmi *kubevirtv1.VirtualMachineInstance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	vmi = vmi.DeepCopy()
	typ := watch.Modified
	if _, ok := f.vmis[vmi.Name]; !ok {
		typ = watch.Added
	}
	f.rev++
	vmi.ResourceVersion = f.version()
	if vmi.Namespace == "" {
		vmi.Namespace = testNamespace
	}
	f.vmis[vmi.Name] = vmi
	f.publish(watch.Event{Type: typ, Object: vmi.DeepCopy()})
}

// vmiObject returns a copy of a stored VMI, or nil.
func (f *fakeAPI) vmiObject(name string) *kubevirtv1.VirtualMachineInstance {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vmi, ok := f.vmis[name]; ok {
		return vmi.DeepCopy()
	}
	return nil
}

// The VMRevisionStore endpoints, for the revision store, with history:
// a GET, and a list and watch narrowed to one name, as the agent asks.

func (f *fakeAPI) getRevisions(_ context.Context, _, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("get revisions " + name); err != nil {
		return nil, err
	}
	cr, ok := f.revisions[name]
	if !ok {
		return nil, apierrors.NewNotFound(revision.StoreGVR.GroupResource(), name)
	}
	return cr.DeepCopy(), nil
}

func (f *fakeAPI) listRevisions(_ context.Context, _, name string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(fmt.Sprintf("list revisions %s rv=%s", name, opts.ResourceVersion)); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetResourceVersion(f.version())
	if cr, ok := f.revisions[name]; ok {
		list.Items = append(list.Items, *cr.DeepCopy())
	}
	return list, nil
}

func (f *fakeAPI) watchRevisions(_ context.Context, _, name string, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	req := fmt.Sprintf("watch revisions %s rv=%s", name, opts.ResourceVersion)
	if initial {
		req += " initial"
	}
	if err := f.record(req); err != nil {
		return nil, err
	}
	w := &fakeWatch{name: name, revisions: true, ch: make(chan watch.Event, 1000), bookmarks: opts.AllowWatchBookmarks}
	rv, _ := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	switch {
	case initial:
		if cr, ok := f.revisions[name]; ok {
			w.send(watch.Event{Type: watch.Added, Object: cr})
		}
		b := &unstructured.Unstructured{}
		b.SetResourceVersion(f.version())
		b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		w.send(watch.Event{Type: watch.Bookmark, Object: b})
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		if cr, ok := f.revisions[name]; ok {
			w.send(watch.Event{Type: watch.Added, Object: cr})
		}
	case rv < f.cacheStart:
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, f.cacheStart)).Status()
		w.send(watch.Event{Type: watch.Error, Object: &status})
		w.end()
		return w, nil
	default:
		for _, ev := range f.history {
			if objectRV(ev.Object) > rv && w.wants(ev) {
				w.send(ev)
			}
		}
	}
	f.watches[w] = true
	return w, nil
}

// putRevisions stores a revision store as `kubectl vmctl rollout` would
// write it, at the next resourceVersion.
func (f *fakeAPI) putRevisions(cr *unstructured.Unstructured) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cr = cr.DeepCopy()
	typ := watch.Modified
	if _, ok := f.revisions[cr.GetName()]; !ok {
		typ = watch.Added
	}
	f.rev++
	cr.SetResourceVersion(f.version())
	if cr.GetNamespace() == "" {
		cr.SetNamespace(testNamespace)
	}
	f.revisions[cr.GetName()] = cr
	f.publish(watch.Event{Type: typ, Object: cr.DeepCopy()})
}

func objectRV(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return rv
}

// fakeWatch is one watch on the VMs a selection selects, or on one VMI or
// VMRevisionStore.
type fakeWatch struct {
	name      string // the selection's name in the request log
	matches   func(*kubevirtv1.VirtualMachine) bool
	vmi       bool // watches the VMI called name, not VMs
	revisions bool // watches the VMRevisionStore called name, not VMs
	bookmarks bool
	ch        chan watch.Event

	mu     sync.Mutex
	closed bool
}

func (w *fakeWatch) wants(ev watch.Event) bool {
	switch o := ev.Object.(type) {
	case *kubevirtv1.VirtualMachineInstance:
		return w.vmi && o.Name == w.name
	case *unstructured.Unstructured:
		return w.revisions && o.GetName() == w.name
	case *kubevirtv1.VirtualMachine:
		return !w.vmi && !w.revisions && w.matches(o)
	}
	return false
}

// send delivers a copy of ev unless the watch ended.
func (w *fakeWatch) send(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	ev.Object = ev.Object.DeepCopyObject()
	select {
	case w.ch <- ev:
	default:
		panic("fakeWatch: 1000 events unread")
	}
}

// end closes the result channel, as a watch the server ended.
func (w *fakeWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

func (w *fakeWatch) open() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed
}

func (w *fakeWatch) Stop()                          { w.end() }
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.ch }
