package gc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

type call struct{ Verb, Resource, Namespace, Selector string }

func TestFind(t *testing.T) {
	unlabelledPod := pod("ns", "relabelled", "uid-r") // its labels were edited away; it still protects its VM
	objs := func(vms ...kubevirtv1.VirtualMachine) []runtime.Object {
		var out []runtime.Object
		for i := range vms {
			out = append(out, &vms[i])
		}
		return out
	}
	kc := kubefake.NewClientset(&unlabelledPod)
	virt := kubevirtfake.NewSimpleClientset(objs(
		vm("ns", "web-relabelled", "ns", "relabelled", "uid-r", time.Hour),
		vm("ns", "web-gone", "ns", "gone", "uid-g", time.Hour),
		vm("ns", "web-x", "podns", "x", "uid-x", time.Hour),
		vm("ns", "not-ours", "ns", "gone", "uid-g", time.Hour, func(v *kubevirtv1.VirtualMachine) { v.Labels = nil }),
	)...)
	dyn := fakeapi.NewDynamic()
	var got []call
	for _, f := range []*k8stesting.Fake{&kc.Fake, &virt.Fake, &dyn.Fake} {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			c := call{Verb: a.GetVerb(), Resource: a.GetResource().Resource, Namespace: a.GetNamespace()}
			if l, ok := a.(k8stesting.ListAction); ok {
				c.Selector = l.GetListRestrictions().Labels.String()
			}
			got = append(got, c)
			return false, nil, nil
		})
	}

	found, err := Find(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: dyn}, "ns", t0.Add(time.Hour), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []call{
		{"list", "virtualmachines", "ns", "vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype"},
		{"list", "pods", "ns", ""},
		{"list", "pods", "podns", ""},
		// web-x has no ownerReference: a fleet anywhere may name it.
		{"list", "pods", "", ""},
		{"list", "virtualmachineinstances", "ns", "vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype"},
		{"list", "vmrevisionstores", "ns", ""}, // no store: nothing more to read
	}
	if diff := cmp.Diff(wantCalls, got); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	var names []string
	for _, o := range found.Orphans {
		names = append(names, o.Name)
	}
	if diff := cmp.Diff([]string{"web-gone", "web-x"}, names); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
}

func TestDeleteSendsUIDPreconditionAndDryRun(t *testing.T) {
	v := vm("ns", "web-a", "ns", "a", "uid-a", time.Hour)
	virt := kubevirtfake.NewSimpleClientset(&v)
	o := Orphan{Namespace: "ns", Name: "web-a", UID: "vm-web-a"}
	if err := Delete(t.Context(), virt, o, []string{metav1.DryRunAll}); err != nil {
		t.Fatal(err)
	}
	acts := virt.Actions()
	if len(acts) != 1 {
		t.Fatalf("got %d actions, want 1 delete: %v", len(acts), acts)
	}
	del, ok := acts[0].(k8stesting.DeleteAction)
	if !ok {
		t.Fatalf("action is %T, want a delete", acts[0])
	}
	opts := del.GetDeleteOptions()
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "vm-web-a" {
		t.Errorf("preconditions = %+v, want UID vm-web-a", opts.Preconditions)
	}
	if diff := cmp.Diff([]string{metav1.DryRunAll}, opts.DryRun); diff != "" {
		t.Errorf("dryRun (-want +got):\n%s", diff)
	}
}

// findIn runs Find in namespace ns against fakes holding pods, vms and
// vmis; forbidAllPods refuses a LIST of Pods in all namespaces.
func findIn(t *testing.T, ns string, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine, vmis []kubevirtv1.VirtualMachineInstance, forbidAllPods bool) Found {
	t.Helper()
	var kubeObjs, virtObjs []runtime.Object
	for i := range pods {
		kubeObjs = append(kubeObjs, &pods[i])
	}
	for i := range vms {
		virtObjs = append(virtObjs, &vms[i])
	}
	for i := range vmis {
		virtObjs = append(virtObjs, &vmis[i])
	}
	kc := kubefake.NewClientset(kubeObjs...)
	if forbidAllPods {
		kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "ns-admin" cannot list resource "pods" at the cluster scope`))
			}
			return false, nil, nil
		})
	}
	found, err := Find(t.Context(), kube.Clients{Kube: kc, KubeVirt: kubevirtfake.NewSimpleClientset(virtObjs...), Dynamic: fakeapi.NewDynamic()}, ns, t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestFindSparesAnotherNamespacesPrototype: prototype P/pq-gone is a copy
// of a VM derived from pq for a Pod that is gone, in another namespace (so
// with no ownerReference), and a fleet in C uses it (--proto-namespace P).
// gc -n P reads the Pods of every namespace before it calls the copy an
// orphan, and leaves it; where it may not read them, it leaves it too, and
// says why. A VM its Pod owns, which goes with its Pod anyway, it deletes.
func TestFindSparesAnotherNamespacesPrototype(t *testing.T) {
	copied := vm("p", derive.Name("pq", "gone", "uid-gone"), "q", "gone", "uid-gone", time.Hour, func(v *kubevirtv1.VirtualMachine) {
		v.Annotations[contract.AnnotationPrototypeName] = "pq"
	})
	owned := vm("p", "web-a", "p", "a", "uid-a", time.Hour)
	fleet := agent("c", "fleet-0", copied.Name, "--proto-namespace=p")
	vms := []kubevirtv1.VirtualMachine{copied, owned}

	found := findIn(t, "p", []corev1.Pod{fleet}, vms, nil, false)
	if len(found.Orphans) != 1 || found.Orphans[0].Name != "web-a" {
		t.Errorf("orphans %+v, want web-a alone", found.Orphans)
	}
	want := []Spared{{Namespace: "p", Name: copied.Name, Kind: KindVM, Why: "pod c/fleet-0 names it as its prototype"}}
	if diff := cmp.Diff(want, found.Spared); diff != "" {
		t.Errorf("spared (-want +got):\n%s", diff)
	}

	found = findIn(t, "p", []corev1.Pod{fleet}, vms, nil, true)
	if len(found.Orphans) != 1 || found.Orphans[0].Name != "web-a" {
		t.Errorf("without leave to list all Pods: orphans %+v, want web-a alone", found.Orphans)
	}
	if len(found.Spared) != 1 || found.Spared[0].Name != copied.Name || !strings.Contains(found.Spared[0].Why, "may not list Pods in all namespaces") {
		t.Errorf("without leave to list all Pods: spared %+v, want %s, saying why", found.Spared, copied.Name)
	}
}

// vmi is the instance of a VM of name, with vmctl's labels for pod, as
// KubeVirt leaves it once its VM was deleted with propagationPolicy
// Orphan: no ownerReference.
func vmi(ns, name, pod string, age time.Duration) kubevirtv1.VirtualMachineInstance {
	return kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID("vmi-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-age)),
		Labels: map[string]string{contract.LabelPrototype: "web", contract.LabelPod: pod},
	}}
}

// TestFindOrphanedVMIs: a VMI with vmctl's labels whose VM is gone, and so
// its Pod, is an orphan; one whose Pod lives is left to its agent; one a
// VM owns, or of whose name a VM exists (whatever its labels), or too
// young, or being deleted, is none.
func TestFindOrphanedVMIs(t *testing.T) {
	owned := vmi("ns", "web-owned", "owned", time.Hour)
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "web-owned", UID: "vm", Controller: ptr.To(true)}}
	deleting := vmi("ns", "web-deleting", "deleting", time.Hour)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	plainVM := kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-plain"}}
	found := findIn(t, "ns", []corev1.Pod{pod("ns", "alive", "uid-alive")},
		[]kubevirtv1.VirtualMachine{plainVM},
		[]kubevirtv1.VirtualMachineInstance{
			vmi("ns", "web-gone", "gone", time.Hour),
			vmi("ns", "web-alive", "alive", time.Hour),
			owned, deleting,
			vmi("ns", "web-plain", "plain", time.Hour), // a VM of its name, without vmctl's labels, adopts it
			vmi("ns", "web-young", "young", 30*time.Second),
		}, false)
	if diff := cmp.Diff([]OrphanVMI{{Namespace: "ns", Name: "web-gone", UID: "vmi-web-gone", Pod: "gone", Age: time.Hour}}, found.OrphanVMIs); diff != "" {
		t.Errorf("orphaned VMIs (-want +got):\n%s", diff)
	}
	want := []Spared{{Namespace: "ns", Name: "web-alive", Kind: KindVMI,
		Why: `no VM owns it, but its Pod "alive" lives: its agent makes its VM again, which adopts it`}}
	if diff := cmp.Diff(want, found.Spared); diff != "" {
		t.Errorf("spared (-want +got):\n%s", diff)
	}
}
