package status

import (
	"strconv"
	"testing"
	"time"

	dynamicfake "k8s.io/client-go/dynamic/fake"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(-d)) }

// agentPod is a running, ready agent Pod of prototype proto, started age ago.
func agentPod(ns, name, uid, node, proto string, age time.Duration, mods ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: ago(age),
			Labels: map[string]string{"app.kubernetes.io/name": "vmctl", "app.kubernetes.io/component": "agent", "app.kubernetes.io/instance": "web"},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "agent", Args: []string{proto}}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			StartTime:         ptrTime(ago(age)),
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", Ready: true}},
		},
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

// waitingForRoom makes a Pod Pending, as kube-scheduler leaves one it found
// no node for, with its message msg.
func waitingForRoom(msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName, p.Status.StartTime = "", nil
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = nil
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

func notReadyPod(p *corev1.Pod) {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.ContainerStatuses[0].Ready = false
}

// protoVM is a prototype VM at generation gen.
func protoVM(ns, name string, gen int64) kubevirtv1.VirtualMachine {
	return kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: gen, CreationTimestamp: ago(time.Hour)}}
}

// derivedVM is a ready VM derived from proto (in ns) at generation gen for
// the Pod podNS/podName with uid, owned by the Pod when in its namespace, as
// an agent makes it.
func derivedVM(ns, proto string, gen int64, podNS, podName, uid, node string, age time.Duration, mods ...func(*kubevirtv1.VirtualMachine)) kubevirtv1.VirtualMachine {
	vm := kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: proto + "-" + podName, CreationTimestamp: ago(age),
			Labels: map[string]string{contract.LabelPrototype: proto, contract.LabelPod: podName},
			Annotations: map[string]string{
				contract.AnnotationPodName:             podName,
				contract.AnnotationPodNamespace:        podNS,
				contract.AnnotationPodUID:              uid,
				contract.AnnotationNode:                node,
				contract.AnnotationPrototypeName:       proto,
				contract.AnnotationPrototypeNamespace:  ns,
				contract.AnnotationPrototypeGeneration: strconv.FormatInt(gen, 10),
			},
		},
		Status: kubevirtv1.VirtualMachineStatus{Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning},
	}
	if ns == podNS {
		vm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	for _, m := range mods {
		m(&vm)
	}
	return vm
}

func notReadyVM(since time.Duration) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) {
		vm.Status.Ready = false
		vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStarting
		if since > 0 {
			vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
				Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(since),
			}}
		}
	}
}

func vmi(ns, name, node string) kubevirtv1.VirtualMachineInstance {
	return kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{NodeName: node},
	}
}

// fakes returns fake clientsets holding objs that honour field selectors
// on names.
func fakes(kubeObjs, virtObjs []runtime.Object) (*kubefake.Clientset, *kubevirtfake.Clientset) {
	kube := kubefake.NewClientset(kubeObjs...)
	virt := kubevirtfake.NewSimpleClientset(virtObjs...)
	fakeapi.SelectNames(&kube.Fake, kube.Tracker())
	fakeapi.SelectNames(&virt.Fake, virt.Tracker())
	return kube, virt
}

// ptrs returns pointers to copies of xs, as an Inventory holds objects.
func ptrs[T any](xs ...T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

func evacuating(v kubevirtv1.VirtualMachineInstance, node string) kubevirtv1.VirtualMachineInstance {
	v.Status.EvacuationNodeName = node
	return v
}

func unschedulable(v kubevirtv1.VirtualMachineInstance, msg string) kubevirtv1.VirtualMachineInstance {
	v.Status.Conditions = append(v.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg,
	})
	return v
}

// stuckVM gives a VM KubeVirt's printableStatus and one condition as
// virt-controller writes it.
func stuckVM(status kubevirtv1.VirtualMachinePrintableStatus, cond string, cs corev1.ConditionStatus, msg string) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) {
		vm.Status.PrintableStatus = status
		vm.Status.Conditions = append(vm.Status.Conditions, kubevirtv1.VirtualMachineCondition{
			Type: kubevirtv1.VirtualMachineConditionType(cond), Status: cs, Message: msg,
		})
	}
}

// reserving makes an agent Pod's template hold held for its VM.
func reserving(held string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[contract.AnnotationReservation] = held
	}
}

// launcher is the launcher Pod of VM vm, bound to node or nominated to
// nominated, asking for cpu and memory.
func launcher(ns, vm, node, nominated, cpu, memory string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "virt-launcher-" + vm + "-abcde", CreationTimestamp: ago(time.Minute),
			OwnerReferences: []metav1.OwnerReference{{Kind: "VirtualMachineInstance", Name: vm}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		}}}},
		Status: corev1.PodStatus{NominatedNodeName: nominated},
	}
}

// stores is a dynamic client that serves the revision stores objs.
func stores(objs ...runtime.Object) dynamic.Interface {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{revision.StoreGVR: revision.StoreKind + "List"}, objs...)
}

// makesVMsIn gives an agent Pod's agent -n ns: it makes its VM there.
func makesVMsIn(ns string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--namespace="+ns) }
}

// renamed names a VM name, as a copy of an agent's VM would be.
func renamed(name string) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) { vm.Name = name }
}

// labelled gives a VMI vmctl's labels, as derive puts them on its VM's
// template, for prototype and pod.
func labelled(v kubevirtv1.VirtualMachineInstance, prototype, pod string) kubevirtv1.VirtualMachineInstance {
	v.Labels = map[string]string{contract.LabelPrototype: prototype, contract.LabelPod: pod}
	return v
}

// ownedByVM gives a VMI its VM as controller, as KubeVirt makes it.
func ownedByVM(v kubevirtv1.VirtualMachineInstance) kubevirtv1.VirtualMachineInstance {
	v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: v.Name, UID: "uid-vm", Controller: ptr.To(true)}}
	return v
}

// pinning makes an agent Pod's template pin VM revision hash, read from
// the store of workload web.
func pinning(hash string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[contract.AnnotationVMRevision] = hash
		p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--"+contract.FlagVMRevisions+"=web-vm-revisions")
	}
}

// storeWith is the revision store of workload web in ns, as slimStore
// keeps it, holding rewritten its revisions rewritten (hash: what the
// content hashes to).
func storeWith(t *testing.T, ns string, rewritten map[string]string) *unstructured.Unstructured {
	t.Helper()
	s := revision.NewStore(ns, "web")
	for h := range rewritten {
		s.Revisions[h] = revision.Snapshot(&kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
		})
	}
	obj, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	kept, err := slimStore(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := kept.(*unstructured.Unstructured)
	got := rewrittenPins([]*unstructured.Unstructured{u})[types.NamespacedName{Namespace: ns, Name: "web-vm-revisions"}]
	if len(got) != len(rewritten) {
		t.Fatalf("slimStore found %v rewritten, want %d", got, len(rewritten))
	}
	return u
}
