package derive

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestIsDerived(t *testing.T) {
	derived := mustVM(t, testPrototype(), testPod(), Options{})
	both := map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"}
	uid := map[string]string{contract.AnnotationPodUID: "pod-uid-1"}

	for _, tc := range []struct {
		name string
		meta metav1.Object
		want bool
	}{
		{name: "a derived VM", meta: derived, want: true},
		{name: "nil", meta: nil, want: false},
		{name: "the prototype", meta: testPrototype(), want: false},
		{name: "labels and uid", meta: &metav1.ObjectMeta{Labels: both, Annotations: uid}, want: true},
		{name: "no pod uid", meta: &metav1.ObjectMeta{Labels: both}, want: false},
		{name: "empty pod uid", meta: &metav1.ObjectMeta{Labels: both, Annotations: map[string]string{contract.AnnotationPodUID: ""}}, want: false},
		{name: "no pod label", meta: &metav1.ObjectMeta{Labels: map[string]string{contract.LabelPrototype: "fedora"}, Annotations: uid}, want: false},
		{name: "no prototype label", meta: &metav1.ObjectMeta{Labels: map[string]string{contract.LabelPod: "web"}, Annotations: uid}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, IsDerived(tc.meta)); diff != "" {
				t.Errorf("IsDerived (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsDerivedFrom(t *testing.T) {
	derived := mustVM(t, testPrototype(), testPod(), Options{Namespace: "elsewhere"})
	for _, tc := range []struct {
		name, namespace, prototype string
		want                       bool
	}{
		{name: "its prototype", namespace: "vms", prototype: "fedora", want: true},
		{name: "a prototype of the same name elsewhere", namespace: "elsewhere", prototype: "fedora", want: false},
		{name: "another prototype", namespace: "vms", prototype: "ubuntu", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, IsDerivedFrom(derived, tc.namespace, tc.prototype)); diff != "" {
				t.Errorf("IsDerivedFrom (-want +got):\n%s", diff)
			}
		})
	}
	if IsDerivedFrom(testPrototype(), "vms", "fedora") {
		t.Error("IsDerivedFrom is true for the prototype itself")
	}
}

func TestIsAgentVM(t *testing.T) {
	long := strings.Repeat("p", 40)
	for _, tc := range []struct {
		name string
		opts Options
		mod  func(vm *metav1.ObjectMeta)
		want bool
	}{
		{name: "as an agent makes it", want: true},
		{name: "long names, cut and ended with the Pod's UID", mod: func(vm *metav1.ObjectMeta) {
			vm.Annotations[contract.AnnotationPrototypeName] = long
			vm.Annotations[contract.AnnotationPodName] = long
			vm.OwnerReferences[0].Name = long
			vm.Name = Name(long, long, testPod().UID)
		}, want: true},
		{name: "named by an older rule", mod: func(vm *metav1.ObjectMeta) { vm.Name = "vmctl-web-7c9d-fedora" }, want: true},
		// Kubernetes' garbage collector deletes this copy with the Pod too.
		{name: "copied and renamed, keeping the ownerReference", mod: func(vm *metav1.ObjectMeta) { vm.Name = "golden" }, want: true},
		{name: "copied and renamed without the ownerReference", mod: func(vm *metav1.ObjectMeta) {
			vm.Name, vm.OwnerReferences = "golden", nil
		}},
		{name: "owned by another Pod", mod: func(vm *metav1.ObjectMeta) { vm.OwnerReferences[0].Name = "web-other" }},
		{name: "owned by an earlier Pod of the name", mod: func(vm *metav1.ObjectMeta) { vm.OwnerReferences[0].UID = "pod-uid-0" }},
		{name: "controlled by something else", mod: func(vm *metav1.ObjectMeta) {
			vm.OwnerReferences[0].APIVersion, vm.OwnerReferences[0].Kind = "apps/v1", "ReplicaSet"
		}},
		{name: "owned but not controlled by the Pod, judged by its name", mod: func(vm *metav1.ObjectMeta) { vm.OwnerReferences[0].Controller = nil }, want: true},
		{name: "owned but not controlled by the Pod, renamed", mod: func(vm *metav1.ObjectMeta) {
			vm.Name, vm.OwnerReferences[0].Controller = "golden", nil
		}},
		{name: "its ownerReference removed, judged by its name", mod: func(vm *metav1.ObjectMeta) { vm.OwnerReferences = nil }, want: true},
		{name: "its ownerReference removed, a long name ended with another UID", mod: func(vm *metav1.ObjectMeta) {
			vm.Annotations[contract.AnnotationPrototypeName] = long
			vm.Annotations[contract.AnnotationPodName] = long
			vm.Name, vm.OwnerReferences = Name(long, long, "another-pod-uid"), nil
		}},
		{name: "in the VM namespace", opts: Options{Namespace: "elsewhere"}, want: true},
		{name: "in the VM namespace, long names", opts: Options{Namespace: "elsewhere"}, mod: func(vm *metav1.ObjectMeta) {
			vm.Annotations[contract.AnnotationPrototypeName] = long
			vm.Annotations[contract.AnnotationPodName] = long
			vm.Name = Name(long, long, testPod().UID)
		}, want: true},
		{name: "in the VM namespace, long names ended with another UID", opts: Options{Namespace: "elsewhere"}, mod: func(vm *metav1.ObjectMeta) {
			vm.Annotations[contract.AnnotationPrototypeName] = long
			vm.Annotations[contract.AnnotationPodName] = long
			vm.Name = Name(long, long, "another-pod-uid")
		}},
		// Nothing but the name tells it from a renamed copy there.
		{name: "in the VM namespace, named by an older rule", opts: Options{Namespace: "elsewhere"},
			mod: func(vm *metav1.ObjectMeta) { vm.Name = "old-rule" }},
		{name: "in the VM namespace, with a controller", opts: Options{Namespace: "elsewhere"}, mod: func(vm *metav1.ObjectMeta) {
			vm.OwnerReferences = podOwner(testPod())
		}},
		{name: "no prototype recorded", mod: func(vm *metav1.ObjectMeta) { delete(vm.Annotations, contract.AnnotationPrototypeName) }},
		{name: "no pod namespace recorded", mod: func(vm *metav1.ObjectMeta) { delete(vm.Annotations, contract.AnnotationPodNamespace) }},
		{name: "no vmctl labels", mod: func(vm *metav1.ObjectMeta) { vm.Labels = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := mustVM(t, testPrototype(), testPod(), tc.opts)
			if tc.mod != nil {
				tc.mod(&vm.ObjectMeta)
			}
			if got := IsAgentVM(vm); got != tc.want {
				t.Errorf("IsAgentVM = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOriginOf reads back what VM records, for the Pod and prototype it
// derived the VM for.
func TestOriginOf(t *testing.T) {
	proto := testPrototype()
	proto.UID, proto.Generation = "proto-uid", 7
	got := OriginOf(mustVM(t, proto, testPod(), Options{Namespace: "elsewhere"}))
	want := Origin{PodName: "web-7c9d", PodNamespace: "vms", PodUID: "pod-uid-1", Node: "node-a",
		PrototypeName: "fedora", PrototypeNamespace: "vms", PrototypeUID: "proto-uid", PrototypeGeneration: 7, HasGeneration: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OriginOf (-want +got):\n%s", diff)
	}
	if got.Pod().String() != "vms/web-7c9d" || got.Prototype().String() != "vms/fedora" {
		t.Errorf("Pod() %s, Prototype() %s, want vms/web-7c9d and vms/fedora", got.Pod(), got.Prototype())
	}
	if o := OriginOf(testPrototype()); o != (Origin{}) {
		t.Errorf("OriginOf(prototype) = %+v, want nothing recorded", o)
	}
}

func TestSelectors(t *testing.T) {
	derived := labels.Set(mustVM(t, testPrototype(), testPod(), Options{}).Labels)
	other := labels.Set{contract.LabelPrototype: "ubuntu", contract.LabelPod: "web-7c9d"}
	plain := labels.Set{"app": "fedora"}

	for _, tc := range []struct {
		name     string
		selector string
		set      labels.Set
		want     bool
	}{
		{name: "derived matches all", selector: DerivedSelector, set: derived, want: true},
		{name: "plain VM does not match all", selector: DerivedSelector, set: plain, want: false},
		{name: "derived matches its prototype", selector: PrototypeSelector("fedora"), set: derived, want: true},
		{name: "another prototype's VM does not match", selector: PrototypeSelector("fedora"), set: other, want: false},
		{name: "Selector of none matches all derived", selector: Selector(""), set: derived, want: true},
		{name: "Selector of a prototype matches its VMs", selector: Selector("fedora"), set: derived, want: true},
		{name: "Selector of a prototype needs the pod label too", selector: Selector("fedora"), set: labels.Set{contract.LabelPrototype: derived[contract.LabelPrototype]}, want: false},
		{name: "Selector of another prototype", selector: Selector("ubuntu"), set: derived, want: false},
		{name: "derived matches its Pod", selector: PodSelector(testPod().Name), set: derived, want: true},
		{name: "another Pod's VM does not match", selector: PodSelector(testPod().Name), set: labels.Set{contract.LabelPrototype: "fedora", contract.LabelPod: "web-5f2b"}, want: false},
		{name: "the longest Pod name matches whole", selector: PodSelector(strings.Repeat("p", 63)), set: labels.Set{contract.LabelPod: strings.Repeat("p", 63)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatalf("parse %q: %v", tc.selector, err)
			}
			if diff := cmp.Diff(tc.want, sel.Matches(tc.set)); diff != "" {
				t.Errorf("%q matches %v (-want +got):\n%s", tc.selector, tc.set, diff)
			}
		})
	}
}

// TestVMRefusesPrototypeWithMarkers: a prototype copied from a derived VM
// keeps vmctl's markers, and gc would delete it as soon as the Pod they name
// is gone. Every marker alone is enough to refuse it, and the fix the error
// gives removes exactly the markers present: kubectl label and annotate fail
// on a key the VM does not have.
func TestVMRefusesPrototypeWithMarkers(t *testing.T) {
	for _, key := range append(append([]string{}, markerLabels...), markerAnnotations...) {
		t.Run(key, func(t *testing.T) {
			proto := testPrototype()
			wantFix := "kubectl annotate vm fedora -n vms " + key + "-"
			if slices.Contains(markerLabels, key) {
				proto.Labels = map[string]string{"app": "fedora", key: "copied"}
				wantFix = "kubectl label vm fedora -n vms " + key + "-"
			} else {
				proto.Annotations = map[string]string{key: "copied"}
			}
			_, err := VM(proto, testPod(), Options{})
			if err == nil {
				t.Fatalf("VM() derived from a prototype with %s; want an error", key)
			}
			if !strings.HasSuffix(err.Error(), ": "+wantFix) {
				t.Errorf("error %q does not end with the fix %q", err, wantFix)
			}
			if !strings.Contains(err.Error(), "copy of a derived VM") {
				t.Errorf("error %q does not say why", err)
			}
		})
	}
}

// TestMarkersFixRemovesOnlyThosePresent: a copy of a Deployment's derived VM
// has no subdomain label, and the fix must not name it.
func TestMarkersFixRemovesOnlyThosePresent(t *testing.T) {
	proto := testPrototype()
	proto.Labels = map[string]string{"app": "fedora", contract.LabelPrototype: "p", contract.LabelPod: "q"}
	proto.Annotations = map[string]string{contract.AnnotationPodUID: "u", contract.AnnotationNode: "n", "keep": "me"}
	_, err := VM(proto, testPod(), Options{})
	if err == nil {
		t.Fatal("VM() derived from a copy of a derived VM; want an error")
	}
	want := "kubectl label vm fedora -n vms " + contract.LabelPrototype + "- " + contract.LabelPod + "- && " +
		"kubectl annotate vm fedora -n vms " + contract.AnnotationPodUID + "- " + contract.AnnotationNode + "-"
	if !strings.HasSuffix(err.Error(), ": "+want) {
		t.Errorf("error %q\ndoes not end with the fix\n%q", err, want)
	}
}
