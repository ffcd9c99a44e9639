package gc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func pod(ns, name, uid string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

// agent is a Pod whose agent runs prototype with args.
func agent(ns, name, prototype string, args ...string) corev1.Pod {
	p := pod(ns, name, "uid-"+name)
	p.Spec.Containers = []corev1.Container{{Name: "agent", Args: append([]string{prototype}, args...)}}
	return p
}

// vm is a VM derived for Pod podNS/podName (uid), created age ago, owned by
// the Pod when in its namespace, as an agent makes it.
func vm(ns, name, podNS, podName, podUID string, age time.Duration, mods ...func(*kubevirtv1.VirtualMachine)) kubevirtv1.VirtualMachine {
	v := kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID("vm-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-age)),
		Labels: map[string]string{contract.LabelPrototype: "web", contract.LabelPod: podName},
		Annotations: map[string]string{
			contract.AnnotationPodName:            podName,
			contract.AnnotationPodNamespace:       podNS,
			contract.AnnotationPodUID:             podUID,
			contract.AnnotationPrototypeName:      "web",
			contract.AnnotationPrototypeNamespace: ns,
		},
	}}
	if ns == podNS {
		v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: types.UID(podUID), Controller: ptr.To(true)}}
	}
	for _, m := range mods {
		m(&v)
	}
	return v
}

func TestOrphans(t *testing.T) {
	tests := []struct {
		name       string
		pods       []corev1.Pod
		vms        []kubevirtv1.VirtualMachine
		minAge     time.Duration
		want       []Orphan
		wantSpared []Spared
	}{{
		name: "pod alive with the recorded UID",
		pods: []corev1.Pod{pod("ns", "a", "uid-a")},
		vms:  []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Hour)},
	}, {
		name: "pod gone",
		vms:  []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Hour)},
		want: []Orphan{{Namespace: "ns", Name: "web-a", UID: "vm-web-a", PodNamespace: "ns", PodName: "a", PodUID: "uid-a", Reason: PodGone, Age: time.Hour, Owned: true}},
	}, {
		name: "pod of that name replaced",
		pods: []corev1.Pod{pod("ns", "a", "uid-a2")},
		vms:  []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Hour)},
		want: []Orphan{{Namespace: "ns", Name: "web-a", UID: "vm-web-a", PodNamespace: "ns", PodName: "a", PodUID: "uid-a", Reason: PodReplaced, Age: time.Hour, Owned: true}},
	}, {
		name: "a pod of the same name in another namespace does not count",
		pods: []corev1.Pod{pod("other", "a", "uid-a")},
		vms:  []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Hour)},
		want: []Orphan{{Namespace: "ns", Name: "web-a", UID: "vm-web-a", PodNamespace: "ns", PodName: "a", PodUID: "uid-a", Reason: PodGone, Age: time.Hour, Owned: true}},
	}, {
		name: "pod in another namespace than its VM is found",
		pods: []corev1.Pod{pod("pods", "a", "uid-a")},
		vms:  []kubevirtv1.VirtualMachine{vm("vms", "web-a", "pods", "a", "uid-a", time.Hour)},
	}, {
		// An older rule named VMs "<pod>-<prototype>": gc finds them by
		// the Pod they record.
		name: "VMs named by an older rule",
		pods: []corev1.Pod{pod("ns", "a", "uid-a")},
		vms: []kubevirtv1.VirtualMachine{
			vm("ns", "a-web", "ns", "a", "uid-a", time.Hour),
			vm("ns", "b-web", "ns", "b", "uid-b", time.Hour),
		},
		want: []Orphan{{Namespace: "ns", Name: "b-web", UID: "vm-b-web", PodNamespace: "ns", PodName: "b", PodUID: "uid-b", Reason: PodGone, Age: time.Hour, Owned: true}},
	}, {
		name:   "younger than min age",
		vms:    []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", 59*time.Second)},
		minAge: time.Minute,
	}, {
		name:   "exactly min age",
		vms:    []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Minute)},
		minAge: time.Minute,
		want:   []Orphan{{Namespace: "ns", Name: "web-a", UID: "vm-web-a", PodNamespace: "ns", PodName: "a", PodUID: "uid-a", Reason: PodGone, Age: time.Minute, Owned: true}},
	}, {
		name: "already being deleted",
		vms: []kubevirtv1.VirtualMachine{vm("ns", "web-a", "ns", "a", "uid-a", time.Hour, func(v *kubevirtv1.VirtualMachine) {
			now := metav1.NewTime(t0)
			v.DeletionTimestamp = &now
		})},
	}, {
		name: "never a VM without vmctl's labels, or without the pod recorded",
		vms: []kubevirtv1.VirtualMachine{
			vm("ns", "no-labels", "ns", "a", "uid-a", time.Hour, func(v *kubevirtv1.VirtualMachine) { v.Labels = nil }),
			vm("ns", "one-label", "ns", "a", "uid-a", time.Hour, func(v *kubevirtv1.VirtualMachine) { delete(v.Labels, contract.LabelPod) }),
			vm("ns", "no-uid", "ns", "a", "", time.Hour),
			vm("ns", "no-pod-name", "ns", "", "uid-a", time.Hour),
			vm("ns", "no-pod-namespace", "", "a", "uid-a", time.Hour),
		},
	}, {
		name: "sorted by namespace and name",
		vms: []kubevirtv1.VirtualMachine{
			vm("b", "web-a", "b", "a", "uid-1", time.Hour),
			vm("a", "web-z", "a", "z", "uid-2", time.Hour),
			vm("a", "web-c", "a", "c", "uid-3", time.Hour),
		},
		want: []Orphan{
			{Namespace: "a", Name: "web-c", UID: "vm-web-c", PodNamespace: "a", PodName: "c", PodUID: "uid-3", Reason: PodGone, Age: time.Hour, Owned: true},
			{Namespace: "a", Name: "web-z", UID: "vm-web-z", PodNamespace: "a", PodName: "z", PodUID: "uid-2", Reason: PodGone, Age: time.Hour, Owned: true},
			{Namespace: "b", Name: "web-a", UID: "vm-web-a", PodNamespace: "b", PodName: "a", PodUID: "uid-1", Reason: PodGone, Age: time.Hour, Owned: true},
		},
	}, {
		name: "never a VM copied from a derived one and renamed, without the Pod's ownerReference",
		vms: []kubevirtv1.VirtualMachine{vm("ns", "golden", "ns", "a", "uid-a", time.Hour, func(v *kubevirtv1.VirtualMachine) {
			v.OwnerReferences = nil
		})},
	}, {
		name: "never a live agent's prototype: named in its arguments",
		pods: []corev1.Pod{agent("ns", "g-0", "web-a"), agent("other", "g-1", "web-b", "--proto-namespace=ns")},
		vms: []kubevirtv1.VirtualMachine{
			vm("ns", "web-a", "ns", "a", "uid-a", time.Hour),
			vm("ns", "web-b", "ns", "b", "uid-b", time.Hour),
			vm("ns", "web-c", "ns", "c", "uid-c", time.Hour),
		},
		want: []Orphan{{Namespace: "ns", Name: "web-c", UID: "vm-web-c", PodNamespace: "ns", PodName: "c", PodUID: "uid-c", Reason: PodGone, Age: time.Hour, Owned: true}},
		wantSpared: []Spared{
			{Namespace: "ns", Name: "web-a", Kind: KindVM, Why: "pod ns/g-0 names it as its prototype"},
			{Namespace: "ns", Name: "web-b", Kind: KindVM, Why: "pod other/g-1 names it as its prototype"},
		},
	}, {
		name: "never a live agent's prototype: named by the VM it derived",
		pods: []corev1.Pod{pod("ns", "x", "uid-x")},
		vms: []kubevirtv1.VirtualMachine{
			vm("ns", "web-a", "ns", "a", "uid-a", time.Hour),
			vm("ns", "web-a-x", "ns", "x", "uid-x", time.Hour, func(v *kubevirtv1.VirtualMachine) {
				v.Annotations[contract.AnnotationPrototypeName] = "web-a"
			}),
		},
		wantSpared: []Spared{{Namespace: "ns", Name: "web-a", Kind: KindVM, Why: "pod ns/x names it as its prototype"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, spared := Orphans(tt.pods, tt.vms, t0, tt.minAge)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Orphans (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSpared, spared); diff != "" {
				t.Errorf("spared (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWhy(t *testing.T) {
	tests := []struct {
		o    Orphan
		want string
	}{
		{Orphan{Namespace: "ns", PodNamespace: "ns", PodName: "a", Reason: PodGone}, `orphaned: its Pod "a" no longer exists`},
		{Orphan{Namespace: "ns", PodNamespace: "ns", PodName: "gone", Reason: PodGone}, `orphaned: its Pod "gone" no longer exists`},
		{Orphan{Namespace: "vms", PodNamespace: "pods", PodName: "a", Reason: PodReplaced}, `orphaned: its Pod "pods/a" was replaced by another of that name`},
	}
	for _, tt := range tests {
		if got := tt.o.Why(); got != tt.want {
			t.Errorf("Why() = %q, want %q", got, tt.want)
		}
	}
}
