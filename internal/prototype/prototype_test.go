package prototype

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
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
