package doubles

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// RunVirtController runs a test double of KubeVirt's virt-controller against
// the cluster behind cfg until ctx is done. It is not KubeVirt: it only does
// what vmctl observes of it, with no virt-handler, launcher pods or guests.
//
//   - A VM that should run (runStrategy Always, RerunOnFailure or Once, or the
//     legacy running: true) gets a VMI of the same name, controlled by the VM
//     and carrying the VM's template. The VMI lands, Running and Ready, on the
//     node named by the template's required node affinity (matchFields
//     metadata.name In [node]); without one it stays Scheduling.
//   - A VM that should not run loses its VMI.
//   - The VM's status gets created, ready, printableStatus and a Ready
//     condition to match.
//   - A VM being deleted is left alone: the garbage collector deletes its
//     VMI, as it does for the real virt-controller's VMIs.
//
// It returns nil once ctx is done, and an error only when it cannot start.
func RunVirtController(ctx context.Context, cfg *rest.Config, log *slog.Logger) error {
	client, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("virt-controller double: build the KubeVirt client: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &virtController{
		client: client,
		log:    log.With("component", "virt-controller-double"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "virt-controller-double"},
		),
	}
	return c.run(ctx)
}

type virtController struct {
	client kubevirt.Interface
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
	vms    cache.Indexer
	vmis   cache.Indexer
}

func (c *virtController) run(ctx context.Context) error {
	defer c.queue.ShutDown()

	vmInformer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.client.KubevirtV1().VirtualMachines(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.client.KubevirtV1().VirtualMachines(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachine{}, time.Minute, cache.Indexers{})
	vmiInformer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.client.KubevirtV1().VirtualMachineInstances(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.client.KubevirtV1().VirtualMachineInstances(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachineInstance{}, time.Minute, cache.Indexers{})
	c.vms, c.vmis = vmInformer.GetIndexer(), vmiInformer.GetIndexer()

	// A VMI shares its VM's namespace and name, so both kinds enqueue the
	// same key.
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: func(obj any) { c.enqueue(obj) },
	}
	for _, inf := range []cache.SharedIndexInformer{vmInformer, vmiInformer} {
		if _, err := inf.AddEventHandler(enqueue); err != nil {
			return fmt.Errorf("virt-controller double: register an event handler: %w", err)
		}
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), vmInformer.HasSynced, vmiInformer.HasSynced) {
		return nil
	}
	c.log.Info("started")

	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.processNext(ctx) {
	}
	return nil
}

func (c *virtController) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	name, err := cache.ObjectToName(obj)
	if err != nil {
		c.log.Error("cannot key an object", "err", err)
		return
	}
	c.queue.Add(name)
}

func (c *virtController) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			c.log.Info("sync failed, will retry", "vm", key.String(), "err", err)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *virtController) sync(ctx context.Context, key cache.ObjectName) error {
	vmObj, vmExists, err := c.vms.GetByKey(key.String())
	if err != nil || !vmExists {
		// No VM: the garbage collector takes care of its VMI.
		return err
	}
	vm := vmObj.(*kubevirtv1.VirtualMachine)
	if vm.DeletionTimestamp != nil {
		// Foreground deletion: the garbage collector deletes the VMI, then
		// the VM. Creating a VMI now would only race it.
		return nil
	}

	var vmi *kubevirtv1.VirtualMachineInstance
	if obj, ok, err := c.vmis.GetByKey(key.String()); err != nil {
		return err
	} else if ok {
		vmi = obj.(*kubevirtv1.VirtualMachineInstance)
	}
	if vmi != nil && !metav1.IsControlledBy(vmi, vm) {
		// Left over from an earlier VM of the same name; the garbage
		// collector removes it, and its deletion requeues this VM.
		c.log.Info("waiting for a VMI of an earlier VM to go", "vm", key.String())
		return c.updateStatus(ctx, vm, desiredVMStatus(vmShouldRun(vm), nil))
	}

	run := vmShouldRun(vm)
	switch {
	case run && vmi == nil:
		created, err := c.client.KubevirtV1().VirtualMachineInstances(vm.Namespace).Create(ctx, newVMIFor(vm), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create VMI: %w", err)
		}
		c.log.Info("created VMI", "vm", key.String(), "node", created.Status.NodeName, "phase", created.Status.Phase)
		vmi = created
	case !run && vmi != nil && vmi.DeletionTimestamp == nil:
		err := c.client.KubevirtV1().VirtualMachineInstances(vm.Namespace).Delete(ctx, vmi.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &vmi.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete VMI: %w", err)
		}
		c.log.Info("deleted VMI", "vm", key.String())
	}
	return c.updateStatus(ctx, vm, desiredVMStatus(run, vmi))
}

// updateStatus writes want into the VM's status if it differs, re-reading the
// VM on conflicts.
func (c *virtController) updateStatus(ctx context.Context, vm *kubevirtv1.VirtualMachine, want vmStatusFields) error {
	vms := c.client.KubevirtV1().VirtualMachines(vm.Namespace)
	vm = vm.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			fresh, err := vms.Get(ctx, vm.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fresh.UID != vm.UID || fresh.DeletionTimestamp != nil {
				return nil
			}
			vm = fresh
		}
		first = false
		if !applyVMStatus(&vm.Status, want, metav1.Now()) {
			return nil
		}
		_, err := vms.UpdateStatus(ctx, vm, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
