package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
)

// reportingVMI is the VMI of VM ns/name as KubeVirt makes it from a VM of
// 1 core and 256Mi (defaults applied), on a TPM, reporting overhead as
// its memory overhead.
func reportingVMI(ns, name, overhead string) kubevirtv1.VirtualMachineInstance {
	v := vmi(ns, name, "n1")
	v.Spec = kubevirtv1.VirtualMachineInstanceSpec{
		Architecture: "amd64",
		Domain: kubevirtv1.DomainSpec{
			CPU:    &kubevirtv1.CPU{Cores: 1, Sockets: 1, Threads: 1},
			Memory: &kubevirtv1.Memory{Guest: ptr.To(resource.MustParse("256Mi"))},
			Devices: kubevirtv1.Devices{
				TPM:        &kubevirtv1.TPMDevice{},
				Disks:      []kubevirtv1.Disk{{Name: "root"}},
				Interfaces: []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}},
			},
		},
		Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "disk"}}}},
	}
	v.Status.Memory = &kubevirtv1.MemoryStatus{MemoryOverhead: ptr.To(resource.MustParse(overhead))}
	return v
}

func deployedKubeVirt(version string) *kubevirtv1.KubeVirt {
	return &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Status:     kubevirtv1.KubeVirtStatus{Phase: kubevirtv1.KubeVirtPhaseDeployed, ObservedKubeVirtVersion: version},
	}
}

// TestOverheadWarning: where a VMI reports another memory overhead than
// vmctl's rule computes from it, status warns once for the prototype whose
// agents hold room; where they agree, or no agent holds room, or the
// KubeVirt CR could not be read, it says nothing. 1 vCPU, VGA and a TPM:
// 228Mi + 8Mi + 32Mi + 53Mi = 321Mi.
func TestOverheadWarning(t *testing.T) {
	proto := protoVM("ns", "web", 5)
	vm := derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)
	inv := func(overhead string, read bool, mods ...func(*corev1.Pod)) *Inventory {
		return &Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, mods...)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(vm),
			VMIs:       ptrs(reportingVMI("ns", vm.Name, overhead)),
			KubeVirt:   deployedKubeVirt("v1.10.0"), KubeVirtRead: read,
		}
	}
	held := reserving("cpu=106m,memory=617Mi")
	for _, tt := range []struct {
		name string
		inv  *Inventory
		want string
	}{
		{name: "agree", inv: inv("321Mi", true, held)},
		{name: "KubeVirt counts more", inv: inv("571Mi", true, held),
			want: "KubeVirt counts 571Mi of memory overhead for VM ns/" + vm.Name + " (its VMI's status.memory.memoryOverhead), " +
				"vmctl's rule for KubeVirt v1.10.0 321Mi, so its agent Pods hold 250Mi too little for each VM"},
		{name: "KubeVirt counts less", inv: inv("300Mi", true, held), want: "hold 21Mi too much for each VM"},
		{name: "no agent holds room", inv: inv("571Mi", true)},
		{name: "KubeVirt CR not read", inv: inv("571Mi", false, held)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := overheadWarning(tt.inv, types.NamespacedName{Namespace: "ns", Name: "web"})
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("overheadWarning() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSlimKeepsOverheadInputs: status keeps VMIs as slim leaves them, and
// computes vmctl's overhead from what it kept as from the full VMI.
func TestSlimKeepsOverheadInputs(t *testing.T) {
	full := reportingVMI("ns", "web-a", "321Mi")
	full.Spec.Domain.Devices.Interfaces[0] = kubevirtv1.Interface{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{PasstBinding: &kubevirtv1.InterfacePasstBinding{}}}
	full.Spec.LivenessProbe = &kubevirtv1.Probe{Handler: kubevirtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	kept, err := slim(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	k := kept.(*kubevirtv1.VirtualMachineInstance)
	kv := deployedKubeVirt("v1.9.0")
	want, got := reserve.MemoryOverheadOf(&full, kv), reserve.MemoryOverheadOf(k, kv)
	if want.Cmp(got) != 0 {
		t.Errorf("overhead of the slim VMI %s, of the full one %s", &got, &want)
	}
	if diff := cmp.Diff(full.Status.Memory, k.Status.Memory); diff != "" {
		t.Errorf("status.memory (-full +slim):\n%s", diff)
	}
	// A VMI that reports no overhead keeps no spec.
	quiet := vmi("ns", "web-b", "n1")
	quiet.Spec = full.Spec
	kept, _ = slim(&quiet)
	if k := kept.(*kubevirtv1.VirtualMachineInstance); k.Spec.Domain.CPU != nil {
		t.Errorf("kept the spec of a VMI that reports no overhead")
	}
}

// TestLoadReadsKubeVirtWhenCompared: Load lists KubeVirt CRs only when a
// VMI reports its overhead beside an agent that holds room, and does
// without them when it may not.
func TestLoadReadsKubeVirtWhenCompared(t *testing.T) {
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=617Mi"))
	vm := derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)
	proto := protoVM("ns", "web", 5)
	reporting := reportingVMI("ns", vm.Name, "321Mi")
	quiet := vmi("ns", vm.Name, "n1")
	for _, v := range []*kubevirtv1.VirtualMachineInstance{&reporting, &quiet} {
		v.Labels = map[string]string{contract.LabelPrototype: "web"} // as KubeVirt copies them from the VM's template
	}
	for _, tt := range []struct {
		name             string
		vmi              kubevirtv1.VirtualMachineInstance
		forbid, wantRead bool
	}{
		{name: "reported", vmi: reporting, wantRead: true},
		{name: "not reported", vmi: quiet},
		{name: "forbidden", vmi: reporting, forbid: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kubeCS, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&vm, &proto, &tt.vmi, deployedKubeVirt("v1.9.0")})
			listed := 0
			virt.PrependReactor("list", "kubevirts", func(k8stesting.Action) (bool, runtime.Object, error) {
				listed++
				if tt.forbid {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "kubevirts"}, "", errors.New("may not"))
				}
				return false, nil, nil
			})
			inv, err := Load(context.Background(), kube.Clients{Kube: kubeCS, KubeVirt: virt, Dynamic: stores()}, Query{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			if wantListed := tt.vmi.Status.Memory != nil; (listed > 0) != wantListed {
				t.Errorf("listed KubeVirt CRs %d times; want a LIST: %v", listed, wantListed)
			}
			if inv.KubeVirtRead != tt.wantRead || (tt.wantRead && inv.KubeVirt == nil) {
				t.Errorf("KubeVirt %v, read %v; want read %v", inv.KubeVirt, inv.KubeVirtRead, tt.wantRead)
			}
		})
	}
}

// TestWatchReadsKubeVirtOnce: --watch reads the KubeVirt CR the first
// time an Inventory needs it, and gives every later one the same.
func TestWatchReadsKubeVirtOnce(t *testing.T) {
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=617Mi"))
	reporting := reportingVMI("ns", "web-a", "321Mi")
	_, virt := fakes(nil, []runtime.Object{deployedKubeVirt("v1.9.0")})
	listed := 0
	virt.PrependReactor("list", "kubevirts", func(k8stesting.Action) (bool, runtime.Object, error) {
		listed++
		return false, nil, nil
	})
	w := &watcher{c: kube.Clients{KubeVirt: virt}}
	for range 3 {
		inv := &Inventory{Pods: ptrs(pod), VMIs: ptrs(reporting)}
		w.kubeVirt(context.Background(), inv)
		if !inv.KubeVirtRead || inv.KubeVirt == nil {
			t.Fatalf("KubeVirt %v, read %v; want the CR", inv.KubeVirt, inv.KubeVirtRead)
		}
	}
	if listed != 1 {
		t.Errorf("listed KubeVirt CRs %d times, want once", listed)
	}
}
