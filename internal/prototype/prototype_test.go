package prototype

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// A prototype of an instancetype: Read takes the instancetype's
// nodeSelector into the placement, and sizes the VMs by its vCPUs and
// memory; without the instancetype it says why both are incomplete.
func TestRead(t *testing.T) {
	proto := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"},
		Spec: kubevirtv1.VirtualMachineSpec{
			Instancetype: &kubevirtv1.InstancetypeMatcher{Name: "large"},
			Template:     &kubevirtv1.VirtualMachineInstanceTemplateSpec{},
		},
	}
	large := &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "large"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:          instancetypev1beta1.CPUInstancetype{Guest: 4},
			Memory:       instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("8Gi")},
			NodeSelector: map[string]string{"size": "large"},
		},
	}
	ctx := context.Background()
	clients := func(virt ...runtime.Object) kube.Clients {
		return kube.Clients{Kube: kubefake.NewClientset(), KubeVirt: kubevirtfake.NewSimpleClientset(virt...)}
	}

	got := Read(ctx, clients(large), proto)
	if got.PlacementErr != nil || got.ReservationErr != nil {
		t.Fatalf("Read with the instancetype: errors %v, %v", got.PlacementErr, got.ReservationErr)
	}
	if diff := cmp.Diff(map[string]string{kubevirtv1.NodeSchedulable: "true", "size": "large"}, got.Placement.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if got.PlacementKey == "" {
		t.Error("no placement key")
	}
	in, err := reserve.Load(ctx, clients(large), proto)
	if err != nil {
		t.Fatal(err)
	}
	launcher, err := reserve.Launcher(proto, in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reserve.Round(launcher), got.Reservation); diff != "" {
		t.Errorf("reservation (-want +got):\n%s", diff)
	}
	if mem := got.Reservation[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("8Gi")) <= 0 {
		t.Errorf("reservation of %s memory, want more than the instancetype's 8Gi guest", mem.String())
	}

	got = Read(ctx, clients(), proto)
	if got.PlacementErr == nil || !strings.Contains(got.PlacementErr.Error(), `"large"`) {
		t.Errorf("placement error %v, want one naming the instancetype", got.PlacementErr)
	}
	if got.ReservationErr == nil || got.Reservation != nil {
		t.Errorf("reservation %v, error %v; want none and an error", got.Reservation, got.ReservationErr)
	}
	if diff := cmp.Diff(map[string]string{kubevirtv1.NodeSchedulable: "true"}, got.Placement.NodeSelector); diff != "" {
		t.Errorf("nodeSelector without the instancetype (-want +got):\n%s", diff)
	}
}

// Pin snapshots the prototype as KubeVirt expands it, and sizes and places
// the agent Pods by that expanded spec: the instancetype is read only
// through the expansion.
func TestPin(t *testing.T) {
	proto := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", UID: "proto-uid", Generation: 4, Labels: map[string]string{"app": "web"}},
		Spec: kubevirtv1.VirtualMachineSpec{
			Instancetype: &kubevirtv1.InstancetypeMatcher{Name: "large"},
			Template:     &kubevirtv1.VirtualMachineInstanceTemplateSpec{},
		},
	}
	// What KubeVirt's expand-spec makes of it: the instancetype's 4 vCPUs,
	// 8Gi and nodeSelector in the spec, the matcher gone.
	expand := func(_ context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		out := vm.DeepCopy()
		out.Spec.Instancetype = nil
		spec := &out.Spec.Template.Spec
		spec.Domain.CPU = &kubevirtv1.CPU{Sockets: 4, Cores: 1, Threads: 1}
		spec.Domain.Memory = &kubevirtv1.Memory{Guest: ptr.To(resource.MustParse("8Gi"))}
		spec.NodeSelector = map[string]string{"size": "large"}
		return out, nil
	}
	c := kube.Clients{Kube: kubefake.NewClientset(), KubeVirt: kubevirtfake.NewSimpleClientset(), Expand: expand}
	pinned, err := Pin(t.Context(), c, proto)
	if err != nil {
		t.Fatal(err)
	}
	rev := pinned.Snapshot
	if rev.Spec.Instancetype != nil || rev.Spec.Template.Spec.Domain.CPU.Sockets != 4 {
		t.Errorf("revision spec %+v, want the expanded one", rev.Spec)
	}
	if rev.Name != "testvm" || rev.UID != "proto-uid" || rev.Generation != 4 || rev.Labels["app"] != "web" {
		t.Errorf("revision metadata %+v, want the prototype's", rev.ObjectMeta)
	}
	if proto.Spec.Instancetype == nil {
		t.Error("Pin changed the prototype")
	}
	if h, _ := revision.Hash(rev); pinned.Hash != h || h == "" {
		t.Errorf("hash %q, want the revision's %q", pinned.Hash, h)
	}
	if pinned.PlacementErr != nil || pinned.ReservationErr != nil {
		t.Fatalf("errors %v, %v; the expanded spec needs no instancetype", pinned.PlacementErr, pinned.ReservationErr)
	}
	if diff := cmp.Diff(map[string]string{kubevirtv1.NodeSchedulable: "true", "size": "large"}, pinned.Placement.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if mem := pinned.Reservation[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("8Gi")) <= 0 {
		t.Errorf("reservation of %s memory, want more than the expanded 8Gi guest", mem.String())
	}

	c.Expand = func(context.Context, *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		return nil, errors.New("instancetype large not found")
	}
	if _, err := Pin(t.Context(), c, proto); err == nil || !strings.Contains(err.Error(), "large not found") {
		t.Errorf("Pin with a failed expansion: error %v, want KubeVirt's", err)
	}
}
