package drift

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// fakeSources are the Sources of the VMs virtObjs and the revision stores
// stores, read through fakes, and the log of every request the fakes
// serve, as "verb resource namespace selectors".
func fakeSources(allNamespaces bool, virtObjs []runtime.Object, stores ...runtime.Object) (*Sources, *kubevirtfake.Clientset, *[]string) {
	kc := kubefake.NewClientset()
	virt := kubevirtfake.NewSimpleClientset(virtObjs...)
	dyn := fakeapi.NewDynamic(stores...)
	var mu sync.Mutex
	calls := &[]string{}
	for _, f := range []*k8stesting.Fake{&kc.Fake, &virt.Fake, &dyn.Fake} {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			r := a.(k8stesting.ListAction).GetListRestrictions()
			mu.Lock()
			defer mu.Unlock()
			*calls = append(*calls, strings.Join([]string{a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), r.Labels.String() + r.Fields.String()}, " "))
			return false, nil, nil
		})
	}
	return NewSources(kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: dyn}, allNamespaces), virt, calls
}

// each is every Check of s.Each, in order.
func each(t *testing.T, s *Sources, namespace, prototype string) []Check {
	t.Helper()
	var checks []Check
	err := s.Each(t.Context(), namespace, prototype, func(c Check) error {
		checks = append(checks, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checks
}

type outcome struct {
	Name    string
	Drifted bool
	Err     string
}

func outcomes(checks []Check) []outcome {
	var out []outcome
	for _, c := range checks {
		o := outcome{Name: c.Namespace + "/" + c.Name, Drifted: c.Drifted()}
		if c.Err != nil {
			o.Err = c.Err.Error()
		}
		out = append(out, o)
	}
	return out
}

func TestEach(t *testing.T) {
	rev, hash, store, edited := pinnedScene(t)
	other := rev.DeepCopy()
	other.Name = "db"
	otherStore, otherHash := storeOf(t, "db", other)

	ok := pinnedFor(t, rev, hash, "web-0")
	drifted := pinnedFor(t, rev, hash, "web-1")
	drifted.Spec.Template.Spec.Domain.CPU.Cores = 16
	pruned := pinnedFor(t, rev, "0000000000", "web-2")
	otherVM := pinnedFor(t, other, otherHash, "db-0")
	elsewhere := pinnedFor(t, rev, hash, "web-3")
	elsewhere.Namespace, elsewhere.OwnerReferences = "elsewhere", nil // an ownerReference cannot cross namespaces
	notOurs := edited.DeepCopy()
	notOurs.Name = "hand-made"
	notOurs.Annotations = map[string]string{contract.AnnotationPodUID: "x", contract.AnnotationPrototypeName: "fedora"}

	copied := ok.DeepCopy() // a derived VM copied and renamed: vmctl's labels, not its Pod's ownerReference
	copied.Name, copied.OwnerReferences = "golden", nil
	objs := []runtime.Object{edited, drifted, ok, pruned, otherVM, elsewhere, notOurs, copied}
	tests := []struct {
		name, namespace, prototype string
		want                       []outcome
		wantCalls                  []string
	}{{
		name: "all namespaces and prototypes",
		want: []outcome{
			{Name: "elsewhere/fedora-web-3"},
			{Name: "vms/db-db-0"},
			{Name: "vms/fedora-web-0"},
			{Name: "vms/fedora-web-1", Drifted: true},
			{Name: "vms/fedora-web-2", Err: "VM revision 0000000000 of prototype vms/fedora is in no revision store of the Pod's namespace (pruned?); " +
				"`kubectl vmctl rollout restart fedora` pins a new one"},
		},
		wantCalls: []string{
			"list virtualmachines  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores  app.kubernetes.io/component=vm-revisions",
		},
	}, {
		name: "one namespace, one prototype", namespace: "vms", prototype: "fedora",
		want: []outcome{{Name: "vms/fedora-web-0"}, {Name: "vms/fedora-web-1", Drifted: true}, {Name: "vms/fedora-web-2",
			Err: "VM revision 0000000000 of prototype vms/fedora is in no revision store of the Pod's namespace (pruned?); " +
				"`kubectl vmctl rollout restart fedora` pins a new one"}},
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype=fedora",
			"list vmrevisionstores vms app.kubernetes.io/component=vm-revisions",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, calls := fakeSources(tt.namespace == "", objs, store, otherStore)
			if diff := cmp.Diff(tt.want, outcomes(each(t, s, tt.namespace, tt.prototype))); diff != "" {
				t.Errorf("Each (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, *calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEachStreams serves the derived VMs two a page, as an API server may,
// and checks that every page was compared and handed on before the next
// was asked for: memory holds a page, not every VM.
func TestEachStreams(t *testing.T) {
	rev, hash, store, _ := pinnedScene(t)
	var objs []runtime.Object
	for i := range 5 {
		objs = append(objs, pinnedFor(t, rev, hash, fmt.Sprintf("web-%d", i)))
	}
	s, virt, _ := fakeSources(false, objs, store)
	compared := 0
	var comparedAtPage []int
	virt.PrependReactor("list", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		comparedAtPage = append(comparedAtPage, compared)
		all, err := virt.Tracker().List(a.GetResource(), kubevirtv1.VirtualMachineGroupVersionKind, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		derived := all.(*kubevirtv1.VirtualMachineList).Items
		from, _ := strconv.Atoi(a.(k8stesting.ListActionImpl).ListOptions.Continue)
		page := &kubevirtv1.VirtualMachineList{Items: derived[from:min(from+2, len(derived))]}
		if from+2 < len(derived) {
			page.Continue = strconv.Itoa(from + 2)
		}
		return true, page, nil
	})
	err := s.Each(t.Context(), "vms", "", func(c Check) error {
		if c.Err != nil || c.Drifted() {
			t.Errorf("%s: drifted %v, error %v", c.Name, c.Drifted(), c.Err)
		}
		compared++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 2, 4}, comparedAtPage); diff != "" {
		t.Errorf("checks handed on when each page was asked for (-want +got):\n%s", diff)
	}
	if compared != 5 {
		t.Errorf("%d checks, want 5", compared)
	}
}

func TestCheckPinnedReportsDerivationErrors(t *testing.T) {
	rev, hash, _, _ := pinnedScene(t)
	live := pinnedFor(t, rev, hash, "web-0")
	rev.Spec.Template = nil // derive.VM refuses this revision
	if c := CheckPinned(live, rev, hash); c.Err == nil || !strings.Contains(c.Err.Error(), "derive from VM revision "+hash+" of prototype vms/fedora: ") {
		t.Fatalf("want a check with a derivation error, got %+v", c)
	}
}

// TestCheckPinnedSeesAPlacementChange: a revision's placement is part of
// what its VMs derive, so diff shows a VM that lacks the nodeSelector or
// toleration of the revision it records as drifted.
func TestCheckPinnedSeesAPlacementChange(t *testing.T) {
	rev, hash, _, _ := pinnedScene(t)
	live := pinnedFor(t, rev, hash, "web-0")
	if c := CheckPinned(live, rev, hash); c.Err != nil || c.Drifted() {
		t.Fatalf("the VM of its revision: %+v", c)
	}
	placed := rev.DeepCopy()
	placed.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	placed.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	c := CheckPinned(live, placed, hash)
	if c.Err != nil || !strings.Contains(c.Diff, "-        kubevirt.io/schedulable: \"true\"") || !strings.Contains(c.Diff, "+        pool: gpu") ||
		!strings.Contains(c.Diff, "+      tolerations:") {
		t.Errorf("diff of a revision with a new placement:\n%s (err %v)", c.Diff, c.Err)
	}
}

// TestEachSeesVMsNamedByAnOlderRule: a VM named by an older rule than
// derive.Name ("<pod>-<prototype>") is still compared, with its data
// volumes and hostname named after it, so it shows no drift for its name.
func TestEachSeesVMsNamedByAnOlderRule(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.Template.Spec.Hostname = "fedora"
	rev := revision.Snapshot(proto)
	store, hash := storeOf(t, "web", rev)
	vm, err := derive.VM(rev, derive.Pod{Name: "web-0", Namespace: proto.Namespace, UID: "uid-web-0", Node: "node-a"},
		derive.Options{AllowSharedVolumes: true, Name: "web-0-" + proto.Name, VMRevisionHash: hash})
	if err != nil {
		t.Fatal(err)
	}
	if len(vm.Spec.DataVolumeTemplates) == 0 {
		t.Fatal("the prototype has no dataVolumeTemplates; the test needs one named after the VM")
	}
	s, _, _ := fakeSources(true, []runtime.Object{proto, asStored(vm)}, store)
	want := []outcome{{Name: proto.Namespace + "/web-0-" + proto.Name}}
	if diff := cmp.Diff(want, outcomes(each(t, s, "", ""))); diff != "" {
		t.Errorf("Each (-want +got):\n%s", diff)
	}
}

// TestCheckPinnedSeesThePodsOwnClaim: a StatefulSet's VM uses its Pod's
// claim, <claim>-<pod>, where the revision names the claim: no drift. A VM
// on another replica's claim drifted.
func TestCheckPinnedSeesThePodsOwnClaim(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.Template.Spec.Volumes = append(proto.Spec.Template.Spec.Volumes, kubevirtv1.Volume{Name: "data",
		VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}})
	rev := revision.Snapshot(proto)
	vm, err := derive.VM(rev, derive.Pod{Name: "db-0", Namespace: proto.Namespace, UID: "uid-db-0", Node: "node-a"},
		derive.Options{ReplicaClaims: []string{"data"}, VMRevisionHash: "0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	live := asStored(vm)
	if c := CheckPinned(live, rev, "0123456789"); c.Err != nil || c.Drifted() {
		t.Fatalf("the Pod's own claim: %+v", c)
	}
	claim := &live.Spec.Template.Spec.Volumes[len(live.Spec.Template.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName
	*claim = "data-db-1"
	if c := CheckPinned(live, rev, "0123456789"); c.Err != nil || !strings.Contains(c.Diff, "-          claimName: data-db-1") {
		t.Errorf("a VM on another replica's claim: want drift naming it, got %+v", c)
	}
}
