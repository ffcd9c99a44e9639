package gc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

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
