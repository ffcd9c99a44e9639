package reserve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypeapi "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

func itSpec(cpus uint32) instancetypev1beta1.VirtualMachineInstancetypeSpec {
	return instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU: instancetypev1beta1.CPUInstancetype{Guest: cpus}, Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("1Gi")},
	}
}

// revision is a ControllerRevision as KubeVirt stores one: the object,
// typed, in data.
func revision(t *testing.T, name, of string, obj runtime.Object) *appsv1.ControllerRevision {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{instancetypeapi.ControllerRevisionObjectNameLabel: of}},
		Data:       runtime.RawExtension{Raw: raw},
	}
}

func TestLoad(t *testing.T) {
	clusterIT := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "size"}, Spec: itSpec(2)}
	nsIT := &instancetypev1beta1.VirtualMachineInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "size", Namespace: "default"}, Spec: itSpec(3)}
	stored := &instancetypev1beta1.VirtualMachineClusterInstancetype{
		TypeMeta:   metav1.TypeMeta{APIVersion: "instancetype.kubevirt.io/v1beta1", Kind: "VirtualMachineClusterInstancetype"},
		ObjectMeta: metav1.ObjectMeta{Name: "size"}, Spec: itSpec(5),
	}
	clusterPref := &instancetypev1beta1.VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: "prefs"}, Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
		PreferredArchitecture: ptr.To("arm64"),
	}}
	deployed := &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Spec:       kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{DefaultRuntimeClass: "kata"}},
		Status:     kubevirtv1.KubeVirtStatus{Phase: kubevirtv1.KubeVirtPhaseDeployed},
	}
	unphased := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}}
	kata := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata", Overhead: &nodev1.Overhead{
		PodFixed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("160Mi")},
	}}

	tests := []struct {
		name      string
		vm        func(*kubevirtv1.VirtualMachine)
		kube      []runtime.Object
		virt      []runtime.Object
		wantCPUs  uint32
		wantPref  bool
		wantKV    string
		wantExtra corev1.ResourceList
	}{{
		name: "nothing referenced, no KubeVirt CR", vm: func(*kubevirtv1.VirtualMachine) {},
		virt: []runtime.Object{unphased},
	}, {
		name: "cluster instancetype by default kind and cluster preference",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size"}
			vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "prefs", Kind: "virtualmachineclusterpreferences"}
		},
		virt: []runtime.Object{clusterIT, nsIT, clusterPref}, wantCPUs: 2, wantPref: true,
	}, {
		name: "namespaced instancetype",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size", Kind: "VirtualMachineInstancetype"}
		},
		virt: []runtime.Object{clusterIT, nsIT}, wantCPUs: 3,
	}, {
		name: "the revision the status names wins over the object",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size"}
			vm.Status.InstancetypeRef = &kubevirtv1.InstancetypeStatusRef{ControllerRevisionRef: &kubevirtv1.ControllerRevisionRef{Name: "rev-1"}}
		},
		kube: []runtime.Object{revision(t, "rev-1", "size", stored)},
		virt: []runtime.Object{clusterIT}, wantCPUs: 5,
	}, {
		name: "a revision of another object is ignored",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size"}
			vm.Status.InstancetypeRef = &kubevirtv1.InstancetypeStatusRef{ControllerRevisionRef: &kubevirtv1.ControllerRevisionRef{Name: "rev-1"}}
		},
		kube: []runtime.Object{revision(t, "rev-1", "older", stored)},
		virt: []runtime.Object{clusterIT}, wantCPUs: 2,
	}, {
		name: "spec.revisionName",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size", RevisionName: "rev-2"}
		},
		kube: []runtime.Object{revision(t, "rev-2", "whatever", stored)},
		virt: []runtime.Object{clusterIT}, wantCPUs: 5,
	}, {
		name: "the deployed KubeVirt CR and its RuntimeClass",
		vm:   func(*kubevirtv1.VirtualMachine) {},
		kube: []runtime.Object{kata},
		virt: []runtime.Object{unphased, deployed}, wantKV: "kubevirt",
		wantExtra: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("160Mi")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := baseVM()
			tt.vm(vm)
			c := kube.Clients{Kube: kubefake.NewClientset(tt.kube...), KubeVirt: kubevirtfake.NewSimpleClientset(tt.virt...)}
			in, err := Load(context.Background(), c, vm)
			if err != nil {
				t.Fatal(err)
			}
			var cpus uint32
			if in.Instancetype != nil {
				cpus = in.Instancetype.CPU.Guest
			}
			if cpus != tt.wantCPUs {
				t.Errorf("instancetype of %d vCPUs, want %d (0: none)", cpus, tt.wantCPUs)
			}
			if (in.Preference != nil) != tt.wantPref {
				t.Errorf("preference %+v, want one: %v", in.Preference, tt.wantPref)
			}
			var kv string
			if in.KubeVirt != nil {
				kv = in.KubeVirt.Name
			}
			if kv != tt.wantKV {
				t.Errorf("KubeVirt CR %q, want %q", kv, tt.wantKV)
			}
			if diff := cmp.Diff(tt.wantExtra, in.PodOverhead); diff != "" {
				t.Errorf("pod overhead (-want +got):\n%s", diff)
			}
			// What Load read, Launcher takes.
			if vm.Spec.Instancetype != nil {
				vm.Spec.Template.Spec.Domain.CPU, vm.Spec.Template.Spec.Domain.Memory = nil, nil
			}
			if _, err := Launcher(vm, in); err != nil {
				t.Errorf("Launcher: %v", err)
			}
		})
	}
}

func TestLoadSaysWhatIsMissing(t *testing.T) {
	deployed := &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Spec:       kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{DefaultRuntimeClass: "kata"}},
		Status:     kubevirtv1.KubeVirtStatus{Phase: kubevirtv1.KubeVirtPhaseDeployed},
	}
	tests := []struct {
		name string
		vm   func(*kubevirtv1.VirtualMachine)
		virt []runtime.Object
		want string
	}{{
		name: "cluster instancetype",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size"}
		},
		want: "VM default/testvm: read VirtualMachineClusterInstancetype size: ",
	}, {
		name: "namespaced preference",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "prefs", Kind: "VirtualMachinePreference"}
		},
		want: "read VirtualMachinePreference default/prefs: ",
	}, {
		name: "unknown kind",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size", Kind: "Flavor"}
		},
		want: `spec.instancetype.kind "Flavor" is not an instancetype kind`,
	}, {
		name: "revision",
		vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size", RevisionName: "gone"}
		},
		want: "read ControllerRevision default/gone: ",
	}, {
		name: "runtime class", vm: func(*kubevirtv1.VirtualMachine) {},
		virt: []runtime.Object{deployed},
		want: `read RuntimeClass "kata", the defaultRuntimeClass of KubeVirt kubevirt/kubevirt: `,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := baseVM()
			tt.vm(vm)
			c := kube.Clients{Kube: kubefake.NewClientset(), KubeVirt: kubevirtfake.NewSimpleClientset(tt.virt...)}
			_, err := Load(context.Background(), c, vm)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if tt.name != "unknown kind" && !strings.Contains(err.Error(), "not found; ") {
				t.Errorf("%v: does not say what to do when it is not found", err)
			}
		})
	}
}
