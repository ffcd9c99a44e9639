package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
)

// lastApplied is the annotation `kubectl apply` keeps a whole copy of the
// object in; prototypes applied from a file carry it.
const lastApplied = corev1.LastAppliedConfigAnnotation

// Slim returns a copy of obj (a Pod, VirtualMachine,
// VirtualMachineInstance, PersistentVolumeClaim or Event) holding only what status, gc and rollout read:
// metadata without managedFields or a last-applied copy; of a VM, its
// status and of its spec only the runStrategy, what places it
// (placement.KeepInputs), and its template's evictionStrategy and
// terminationGracePeriodSeconds; of a VMI, its node,
// evacuation node, conditions and first address; of a Pod, its node, its
// containers' names, arguments and requests, its overhead, its readiness
// and its nominated node. 10,000 VMs so kept
// take a fraction of the memory of the full objects. Other objects (an
// informer's DeletedFinalStateUnknown) are returned unchanged. Its
// signature is client-go's cache.TransformFunc.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slimPod(o), nil
	case *kubevirtv1.VirtualMachine:
		return slimVM(o), nil
	case *corev1.PersistentVolumeClaim:
		// Whether it is bound (status's claim problems).
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: o.ObjectMeta, Status: corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}}
		slimMeta(&pvc.ObjectMeta)
		return pvc, nil
	case *corev1.Event:
		// Whose it is, and what it says (status's agentSays).
		e := &corev1.Event{ObjectMeta: o.ObjectMeta, InvolvedObject: o.InvolvedObject, Reason: o.Reason, Message: o.Message,
			Source: o.Source, FirstTimestamp: o.FirstTimestamp, LastTimestamp: o.LastTimestamp, EventTime: o.EventTime, Type: o.Type}
		slimMeta(&e.ObjectMeta)
		return e, nil
	case *kubevirtv1.VirtualMachineInstance:
		vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: o.ObjectMeta}
		slimMeta(&vmi.ObjectMeta)
		vmi.Status.NodeName = o.Status.NodeName
		// What a drain does to it (status's drainProblem).
		vmi.Status.EvacuationNodeName = o.Status.EvacuationNodeName
		vmi.Status.Conditions = o.Status.Conditions
		// status -o wide's VM IP: the first address reported.
		for _, i := range o.Status.Interfaces {
			if i.IP != "" {
				vmi.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: i.IP}}
				break
			}
		}
		return vmi, nil
	}
	return obj, nil
}

func slimVM(o *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	// Of the spec, only what stuck.Of reads (whether someone stopped it)
	// and what places its VMs (placement.KeepInputs), for a prototype's
	// placement.Key.
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: o.ObjectMeta,
		Spec: placement.KeepInputs(o).Spec,
		Status: kubevirtv1.VirtualMachineStatus{
			Ready:           o.Status.Ready,
			PrintableStatus: o.Status.PrintableStatus,
			Conditions:      o.Status.Conditions,
			StartFailure:    o.Status.StartFailure,
		}}
	// And what status warns of once per prototype
	// (derive.GracePeriodTooShort, derive.EvictionStrategyOverridden).
	if t := o.Spec.Template; t != nil {
		vm.Spec.Template.Spec.EvictionStrategy = t.Spec.EvictionStrategy
		vm.Spec.Template.Spec.TerminationGracePeriodSeconds = t.Spec.TerminationGracePeriodSeconds
	}
	slimMeta(&vm.ObjectMeta)
	return vm
}

func slimPod(o *corev1.Pod) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: o.ObjectMeta}
	slimMeta(&pod.ObjectMeta)
	pod.Spec.NodeName = o.Spec.NodeName
	pod.Spec.Containers = make([]corev1.Container, len(o.Spec.Containers))
	for i, c := range o.Spec.Containers {
		pod.Spec.Containers[i] = corev1.Container{Name: c.Name, Args: c.Args, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
	}
	// What the scheduler counts (reserve.Counted), of a VM's launcher Pod.
	for _, c := range o.Spec.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests},
		})
	}
	pod.Spec.Overhead = o.Spec.Overhead
	pod.Status = corev1.PodStatus{Phase: o.Status.Phase, StartTime: o.Status.StartTime, Conditions: o.Status.Conditions,
		NominatedNodeName: o.Status.NominatedNodeName}
	pod.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(o.Status.ContainerStatuses))
	for i, c := range o.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i] = corev1.ContainerStatus{Name: c.Name, Ready: c.Ready}
	}
	return pod
}

// slimMeta drops managedFields and the last-applied copy from m, whose maps
// it must not change in place: they are shared with the original.
func slimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, ok := m.Annotations[lastApplied]; ok {
		a := make(map[string]string, len(m.Annotations)-1)
		for k, v := range m.Annotations {
			if k != lastApplied {
				a[k] = v
			}
		}
		m.Annotations = a
	}
}

// SlimPrototype is Slim for the VMs read as prototypes, which are few: it
// keeps a VirtualMachine's whole spec, which its revision hash reads
// (prototype.Revise), its metadata as Slim keeps it, and no status. Other
// objects are returned as Slim returns them. Its signature is client-go's
// cache.TransformFunc.
func SlimPrototype(obj any) (any, error) {
	o, ok := obj.(*kubevirtv1.VirtualMachine)
	if !ok {
		return Slim(obj)
	}
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: o.ObjectMeta, Spec: *o.Spec.DeepCopy()}
	slimMeta(&vm.ObjectMeta)
	return vm, nil
}
