package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// pins makes an agent Pod's template pin VM revision hash, as scaffold
// writes it; "" pins none.
func pins(hash string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if hash == "" {
			return
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[contract.AnnotationVMRevision] = hash
		p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--vm-revisions=web-vm-revisions")
	}
}

// ownedBy makes a Pod one of workload kind/name's: a Deployment's is its
// ReplicaSet's, named <name>-<pod-template-hash>.
func ownedBy(kind, name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ref := metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}
		if kind == "Deployment" {
			ref.Kind, ref.Name = "ReplicaSet", name+"-7865bc9459"
			p.Labels["pod-template-hash"] = "7865bc9459"
		}
		p.OwnerReferences = []metav1.OwnerReference{ref}
	}
}

// revisionOf makes a derived VM record VM revision hash.
func revisionOf(hash string) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationVMRevision] = hash }
}

func TestPairPinned(t *testing.T) {
	proto := protoVM("ns", "web", 5)
	web := ownedBy("Deployment", "web")
	unpinnedMsg := "no VM revision pinned: kubectl vmctl rollout restart web"
	tests := []struct {
		name string
		inv  Inventory
		want []brief
	}{{
		name: "a pinned VM is judged by its Pod's revision, not the prototype's generation nor placement",
		inv: Inventory{
			Pods: ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, web, pins("1111111111"), func(p *corev1.Pod) {
				p.Annotations[contract.AnnotationPlacement] = "an-older-placement"
			})),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 3, "ns", "a", "uid-a", "n1", time.Hour, revisionOf("1111111111"))),
			VMIs:       ptrs(vmi("ns", "web-a", "n1")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1"}},
	}, {
		name: "a pinned VM of another revision than its Pod's, or of none",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, web, pins("1111111111")),
				agentPod("ns", "b", "uid-b", "n1", "web", time.Hour, web, pins("1111111111")),
			),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, revisionOf("2222222222")),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b", "n1", time.Hour),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM of revision 2222222222, its Pod pins 1111111111"}},
			{Namespace: "ns", Pod: "b", VM: "web-b", Problems: []string{"VM of revision <none>, its Pod pins 1111111111"}},
		},
	}, {
		name: "a pinned workload needs no prototype; an orphan of a revision is only an orphan",
		inv: Inventory{
			Pods: ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, web, pins("1111111111"))),
			VMs: ptrs(
				derivedVM("ns", "web", 3, "ns", "a", "uid-a", "n1", time.Hour, revisionOf("1111111111")),
				derivedVM("ns", "web", 3, "ns", "gone", "uid-g", "n1", time.Hour, revisionOf("0000000000")),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a"},
			{Namespace: "ns", Pod: "gone", VM: "web-gone", Problems: []string{"orphaned VM (pod gone)"}},
		},
	}, {
		name: "the unpinned Pods of workloads, with a VM or without, say how to pin them, which is why a VM is missing",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, web),
				agentPod("ns", "b", "uid-b", "n1", "web", time.Minute, ownedBy("StatefulSet", "web")),
				agentPod("ns", "c", "uid-c", "n1", "web", 5*time.Second, ownedBy("DaemonSet", "web")),
			),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 4, "ns", "a", "uid-a", "n1", time.Hour)),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{unpinnedMsg}},
			{Namespace: "ns", Pod: "b", Problems: []string{unpinnedMsg}},
			{Namespace: "ns", Pod: "c", Problems: []string{unpinnedMsg}},
		},
	}, {
		name: "no rollout pins an agent run by hand, a terminating Pod, or a bare ReplicaSet's",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour),
				agentPod("ns", "b", "uid-b", "n1", "web", time.Hour, web, func(p *corev1.Pod) { p.DeletionTimestamp = ptrTime(ago(time.Second)) }),
				agentPod("ns", "c", "uid-c", "n1", "web", time.Hour, ownedBy("ReplicaSet", "web-rs")),
			),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "c", "uid-c", "n1", time.Hour),
			),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a"}, {Namespace: "ns", Pod: "b", VM: "web-b"}, {Namespace: "ns", Pod: "c", VM: "web-c"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := briefs(Pair(&tt.inv, t0, NotReadyGrace))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Pair (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkloadOf(t *testing.T) {
	pod := func(mods ...func(*corev1.Pod)) *corev1.Pod {
		p := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, mods...)
		return &p
	}
	for _, tt := range []struct {
		pod    *corev1.Pod
		want   string
		wantOK bool
	}{
		{pod: pod(ownedBy("Deployment", "web")), want: "deployment.apps/web", wantOK: true},
		{pod: pod(ownedBy("StatefulSet", "db")), want: "statefulset.apps/db", wantOK: true},
		{pod: pod(ownedBy("DaemonSet", "node-vm")), want: "daemonset.apps/node-vm", wantOK: true},
		{pod: pod(ownedBy("ReplicaSet", "bare"))},
		{pod: pod(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "StatefulSet", Name: "x", Controller: ptr.To(true)}}
		})},
		{pod: pod(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "x"}} // not its controller
		})},
		{pod: pod()},
	} {
		got, ok := workloadOf(tt.pod)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("workloadOf(owners %v) = %q, %v; want %q, %v", tt.pod.OwnerReferences, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestWarningsOfUnrolledRevisions(t *testing.T) {
	web := ownedBy("Deployment", "web")
	agent := func(ns, name string, mods ...func(*corev1.Pod)) corev1.Pod {
		return agentPod(ns, name, "uid-"+name, "n1", "web", time.Hour, mods...)
	}
	protoKey := types.NamespacedName{Namespace: "ns", Name: "web"}
	unrolledBy := func(workload, namespace string, pinned ...string) Warning {
		return Warning{PrototypeNamespace: "ns", Prototype: "web", Workload: workload,
			Message: revision.Unrolled(pinned, protoKey, "2222222222", namespace)}
	}
	tests := []struct {
		name string
		inv  Inventory
		want []Warning
	}{{
		name: "Pods of the prototype's revision now",
		inv:  Inventory{Pods: ptrs(agent("ns", "a", web, pins("2222222222")))},
	}, {
		name: "once per workload, whatever its Pods, with the revisions they pin",
		inv: Inventory{Query: Query{Namespace: "ns"}, Pods: ptrs(
			agent("ns", "a", web, pins("1111111111")),
			agent("ns", "b", web, pins("1111111111")),
			agent("ns", "c", web, pins("0000000000")),
			agent("ns", "d", ownedBy("StatefulSet", "db"), pins("1111111111")),
		)},
		want: []Warning{
			unrolledBy("deployment.apps/web", "", "0000000000", "1111111111"),
			unrolledBy("statefulset.apps/db", "", "1111111111"),
		},
	}, {
		name: "a workload rolling out the revision now, or back from it, is not warned of",
		inv: Inventory{Pods: ptrs(
			agent("ns", "a", web, pins("1111111111")),
			agent("ns", "b", web, pins("2222222222")),
		)},
	}, {
		name: "terminating Pods, unpinned Pods, Pods of no workload and Pods not shown say nothing",
		inv: Inventory{Query: Query{Namespace: "ns"}, Pods: ptrs(
			agent("ns", "a", web, pins("1111111111"), func(p *corev1.Pod) { p.DeletionTimestamp = ptrTime(ago(time.Second)) }),
			agent("ns", "b", web),
			agent("ns", "c", pins("1111111111")),
			agent("other", "d", web, pins("1111111111")),
		)},
	}, {
		name: "all namespaces: the command names the workload's namespace, the warning too where it is not the prototype's",
		inv: Inventory{Pods: ptrs(
			agent("ns", "a", web, pins("1111111111")),
			agent("apps", "b", web, pins("1111111111"), func(p *corev1.Pod) {
				p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--proto-namespace=ns")
			}),
		)},
		want: []Warning{
			unrolledBy("deployment.apps/web", "ns", "1111111111"),
			unrolledBy("deployment.apps/web in apps namespace", "apps", "1111111111"),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.inv.Revisions = map[types.NamespacedName]string{protoKey: "2222222222"}
			got := Warnings(&tt.inv, Pair(&tt.inv, t0, NotReadyGrace))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}
	// A prototype whose revision could not be taken: nothing to say.
	inv := Inventory{Pods: ptrs(agent("ns", "a", web, pins("1111111111")))}
	if got := Warnings(&inv, Pair(&inv, t0, NotReadyGrace)); len(got) != 0 {
		t.Errorf("Warnings without the prototype's revision: %v", got)
	}
	w := unrolledBy("deployment.apps/web", "", "1111111111")
	if got, want := w.String(), "deployment.apps/web "+w.Message; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestReviser: the revisions of the prototypes that pinned Pods name, and
// no other, each taken once until the prototype changes; one it cannot
// take is left out, and asked again only after a while.
func TestReviser(t *testing.T) {
	web, db, other := protoVM("ns", "web", 1), protoVM("ns", "db", 1), protoVM("ns", "other", 1)
	web.ResourceVersion, db.ResourceVersion = "10", "20"
	db.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "large"}
	inv := func() *Inventory {
		return &Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, pins("1111111111")),
				agentPod("ns", "b", "uid-b", "n1", "db", time.Hour, pins("1111111111")),
				agentPod("ns", "c", "uid-c", "n1", "other", time.Hour),
			),
			Prototypes: ptrs(web, db, other),
		}
	}
	asked := map[string]int{}
	expand := func(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		asked[vm.Name]++
		return fakeapi.NoExpand(ctx, vm)
	}
	r := newReviser(expand)
	first := inv()
	r.revise(t.Context(), first, t0)
	_, want, err := prototype.Revise(t.Context(), fakeapi.NoExpand, &web)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[types.NamespacedName]string{{Namespace: "ns", Name: "web"}: want}, first.Revisions); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	later := inv()
	r.revise(t.Context(), later, t0.Add(retryRevise/2))
	if diff := cmp.Diff(map[string]int{"web": 1, "db": 1}, asked); diff != "" {
		t.Errorf("expansions asked for, within the retry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(first.Revisions, later.Revisions); diff != "" {
		t.Errorf("revisions kept (-first +later):\n%s", diff)
	}
	changed := inv()
	changed.Prototypes[0].ResourceVersion = "11"
	r.revise(t.Context(), changed, t0.Add(retryRevise))
	if diff := cmp.Diff(map[string]int{"web": 2, "db": 2}, asked); diff != "" {
		t.Errorf("expansions asked for, the prototype changed and the retry past (-want +got):\n%s", diff)
	}

	none := inv()
	newReviser(nil).revise(t.Context(), none, t0)
	if none.Revisions != nil {
		t.Errorf("revisions without an expander: %v", none.Revisions)
	}
}

// TestLoadTakesRevisions: Load takes the revisions of the prototypes that
// pinned Pods name, asking KubeVirt nothing for one without instancetype,
// and keeps the prototype's spec to hash.
func TestLoadTakesRevisions(t *testing.T) {
	web := protoVM("ns", "web", 1)
	web.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
	web.Spec.Template.Spec.Domain.CPU = &kubevirtv1.CPU{Cores: 4}
	web.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{{Name: "root"}}
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, pins("1111111111"))
	vm := derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour, revisionOf("1111111111"))
	kc, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&web, &vm})
	log := record(&kc.Fake, &virt.Fake)
	var expanded int
	expand := func(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		expanded++
		return fakeapi.NoExpand(ctx, vm)
	}
	inv, err := Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores(), Expand: expand}, Query{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := prototype.Revise(t.Context(), fakeapi.NoExpand, &web)
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.Revisions[types.NamespacedName{Namespace: "ns", Name: "web"}]; got != want || expanded != 1 {
		t.Errorf("revision %q after %d expansions, want %q (of the whole spec) after 1", got, expanded, want)
	}
	if len(*log) != 4 {
		t.Errorf("Load made %d requests, want its 4 LISTs: %v", len(*log), calls(*log))
	}

	failing := func(context.Context, *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		return nil, errors.New("virt-api is down")
	}
	inv, err = Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores(), Expand: failing}, Query{Namespace: "ns"})
	if err != nil || len(inv.Revisions) != 0 {
		t.Errorf("Load with KubeVirt's expansion failing: error %v, revisions %v; want neither", err, inv.Revisions)
	}
}
