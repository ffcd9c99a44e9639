package doubles

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// HandlerIdentity is virt-handler's identity, as KubeVirt gives it to the
// virt-handler of every node: its ServiceAccount kubevirt-handler, whose
// RBAC lets it follow every VMI, and, on each node, a token bound to that
// node, without which KubeVirt's node restriction (on by default from
// v1.9) refuses its changes to the VMIs of that node.
type HandlerIdentity interface {
	// Config authenticates as the ServiceAccount, on no node.
	Config() *rest.Config
	// ConfigOn authenticates as the ServiceAccount on node.
	ConfigOn(ctx context.Context, node string) (*rest.Config, error)
}

// RunVirtHandler runs a stand-in for KubeVirt's virt-handler, the node agent
// that starts the guest in a launcher Pod, on every node of the cluster id
// authenticates to, until ctx is done. There is no libvirt here and no
// guest: it does only the two phase changes of a VMI that virt-handler
// reports and that KubeVirt's real virt-controller (package kubevirt) waits
// for.
//
//   - A VMI that virt-controller handed over (phase Scheduled: its launcher
//     Pod runs and is Ready on a node) becomes Running, as when the guest
//     boots. virt-controller then derives the VMI's Ready condition from the
//     launcher Pod, and the VM's status from the VMI.
//   - A VMI being deleted that is Scheduled or Running becomes Succeeded, as
//     when the guest shuts down; virt-controller then deletes the launcher
//     Pod and removes its finalizers.
//
// Each change records its phase transition timestamp, as virt-handler does,
// and is made as the virt-handler of the VMI's node (id.ConfigOn): virt-api
// takes VMI status changes only from KubeVirt's own identities, and from
// v1.9 only from the VMI's node. It returns nil once ctx is done, and an
// error only when it cannot start.
func RunVirtHandler(ctx context.Context, id HandlerIdentity, log *slog.Logger) error {
	client, err := kubevirt.NewForConfig(id.Config())
	if err != nil {
		return fmt.Errorf("virt-handler stand-in: build the KubeVirt client: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "virt-handler-stand-in")
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "virt-handler-stand-in"},
	)
	defer queue.ShutDown()

	vmis := client.KubevirtV1().VirtualMachineInstances(metav1.NamespaceAll)
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return vmis.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return vmis.Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachineInstance{}, 0, cache.Indexers{})
	enqueue := func(obj any) {
		if vmi, ok := obj.(*kubevirtv1.VirtualMachineInstance); ok && nextPhase(vmi) != "" {
			queue.Add(cache.MetaObjectToName(vmi))
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return fmt.Errorf("virt-handler stand-in: register an event handler: %w", err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	log.Info("started")
	nodes := &nodeClients{id: id, clients: map[string]kubevirt.Interface{}}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()

	for {
		key, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		err := setPhase(ctx, nodes.client, informer.GetIndexer(), key, log)
		switch {
		case err == nil:
			queue.Forget(key)
		case ctx.Err() == nil:
			log.Info("update failed, will retry", "vmi", key.String(), "err", err)
			queue.AddRateLimited(key)
		}
		queue.Done(key)
	}
}

// setPhase moves the VMI at key to its next phase, if it has one. It updates
// the VMI as virt-handler does (KubeVirt gives virt-handler update, not
// patch); the resourceVersion makes a stale copy fail rather than overwrite
// what virt-controller wrote since.
func setPhase(ctx context.Context, clientOn func(context.Context, string) (kubevirt.Interface, error), store cache.Indexer, key cache.ObjectName, log *slog.Logger) error {
	obj, ok, err := store.GetByKey(key.String())
	if err != nil || !ok {
		return err
	}
	vmi := obj.(*kubevirtv1.VirtualMachineInstance)
	next := nextPhase(vmi)
	if next == "" {
		return nil
	}
	updated := vmi.DeepCopy()
	updated.Status.Phase = next
	// As virt-handler does (controller.SetVMIPhaseTransitionTimestamp):
	// virt-controller reads them, e.g. a VMI that never ran counts as a
	// failed start and the VM backs off before the next.
	updated.Status.PhaseTransitionTimestamps = append(updated.Status.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: next, PhaseTransitionTimestamp: metav1.Now()})
	client, err := clientOn(ctx, vmi.Status.NodeName)
	if err != nil {
		return err
	}
	_, err = client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The informer brings the newer VMI, and with it another try.
		return nil
	case err != nil:
		return err
	}
	log.Info("VMI phase", "vmi", key.String(), "node", vmi.Status.NodeName, "from", vmi.Status.Phase, "to", next)
	return nil
}

// nextPhase is the phase virt-handler would report next for vmi, or "" when
// it has nothing to report.
func nextPhase(vmi *kubevirtv1.VirtualMachineInstance) kubevirtv1.VirtualMachineInstancePhase {
	switch {
	case vmi.DeletionTimestamp != nil && (vmi.Status.Phase == kubevirtv1.Scheduled || vmi.Status.Phase == kubevirtv1.Running):
		return kubevirtv1.Succeeded
	case vmi.DeletionTimestamp == nil && vmi.Status.Phase == kubevirtv1.Scheduled && vmi.Status.NodeName != "":
		return kubevirtv1.Running
	}
	return ""
}

// nodeClients are the virt-handler clients of each node, made on first use.
// setPhase runs on one goroutine, so they need no lock.
type nodeClients struct {
	id      HandlerIdentity
	clients map[string]kubevirt.Interface
}

// client is the virt-handler client of node.
func (n *nodeClients) client(ctx context.Context, node string) (kubevirt.Interface, error) {
	if c, ok := n.clients[node]; ok {
		return c, nil
	}
	cfg, err := n.id.ConfigOn(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("virt-handler stand-in: authenticate on node %s: %w", node, err)
	}
	c, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("virt-handler stand-in: build the KubeVirt client of node %s: %w", node, err)
	}
	n.clients[node] = c
	return c, nil
}
