package revision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func prototype() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Name: "testvm", Namespace: "vms", UID: types.UID("0d7c"), Generation: 3, ResourceVersion: "812",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "a", corev1.LastAppliedConfigAnnotation: "{}"},
			Finalizers:  []string{"example.com/keep"},
		},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 2}},
			}},
		},
		Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusStopped},
	}
}

func TestSnapshotKeepsWhatDeriveReads(t *testing.T) {
	proto := prototype()
	r := Snapshot(proto)
	if r.Name != "testvm" || r.Namespace != "vms" || r.UID != "0d7c" || r.Generation != 3 {
		t.Errorf("identity %s/%s uid %s generation %d, want the prototype's", r.Namespace, r.Name, r.UID, r.Generation)
	}
	if r.ResourceVersion != "" || len(r.Finalizers) != 0 || r.Status.PrintableStatus != "" {
		t.Errorf("the snapshot keeps the prototype object's own state: resourceVersion %q, finalizers %v, status %q",
			r.ResourceVersion, r.Finalizers, r.Status.PrintableStatus)
	}
	if _, ok := r.Annotations[corev1.LastAppliedConfigAnnotation]; ok || r.Annotations["team"] != "a" {
		t.Errorf("annotations %v, want the prototype's but kubectl's last-applied", r.Annotations)
	}
	r.Labels["app"] = "changed"
	r.Spec.Template.Spec.Domain.CPU.Cores = 8
	if proto.Labels["app"] != "web" || proto.Spec.Template.Spec.Domain.CPU.Cores != 2 {
		t.Error("changing the snapshot changed the prototype")
	}
}

func TestHashNamesContent(t *testing.T) {
	base, err := Hash(Snapshot(prototype()))
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != hashLength {
		t.Errorf("hash %q, want %d hex digits", base, hashLength)
	}
	same := []func(*kubevirtv1.VirtualMachine){
		func(p *kubevirtv1.VirtualMachine) { p.UID, p.Generation = "another", 9 },
		func(p *kubevirtv1.VirtualMachine) { p.ResourceVersion = "999" },
		func(p *kubevirtv1.VirtualMachine) { p.Annotations[corev1.LastAppliedConfigAnnotation] = `{"other":1}` },
		// KubeVirt's random firmware UUID for the prototype, which no VM gets.
		func(p *kubevirtv1.VirtualMachine) {
			p.Spec.Template.Spec.Domain.Firmware = &kubevirtv1.Firmware{UUID: "5f1b6c2e-0000-4000-8000-000000000001", Serial: "s"}
		},
	}
	for i, change := range same {
		p := prototype()
		change(p)
		if h, _ := Hash(Snapshot(p)); h != base {
			t.Errorf("change %d, which makes no other VM, changed the hash %s to %s", i, base, h)
		}
	}
	other := map[string]func(*kubevirtv1.VirtualMachine){
		"name":       func(p *kubevirtv1.VirtualMachine) { p.Name = "other" },
		"namespace":  func(p *kubevirtv1.VirtualMachine) { p.Namespace = "other" },
		"label":      func(p *kubevirtv1.VirtualMachine) { p.Labels["release"] = "v2" },
		"annotation": func(p *kubevirtv1.VirtualMachine) { p.Annotations["team"] = "b" },
		"spec":       func(p *kubevirtv1.VirtualMachine) { p.Spec.Template.Spec.Domain.CPU.Cores = 3 },
		"firmware": func(p *kubevirtv1.VirtualMachine) {
			p.Spec.Template.Spec.Domain.Firmware = &kubevirtv1.Firmware{UUID: "5f1b6c2e-0000-4000-8000-000000000001", Bootloader: &kubevirtv1.Bootloader{EFI: &kubevirtv1.EFI{}}}
		},
	}
	for what, change := range other {
		p := prototype()
		change(p)
		if h, _ := Hash(Snapshot(p)); h == base {
			t.Errorf("a change of the %s kept the hash %s", what, base)
		}
	}
}
