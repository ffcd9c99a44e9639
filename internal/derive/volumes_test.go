package derive

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func containerDiskVolume(name string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"},
	}}
}

func pvcVolume(name, claim string, readOnly bool) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly},
		},
	}}
}

func dataVolumeVolume(name, dv string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		DataVolume: &kubevirtv1.DataVolumeSource{Name: dv},
	}}
}

func ephemeralVolume(name, claim string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		Ephemeral: &kubevirtv1.EphemeralVolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		},
	}}
}

func dvTemplate(name, namespace string) kubevirtv1.DataVolumeTemplateSpec {
	return kubevirtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "fedora"}}}
}

func TestVMRenamesDataVolumeTemplates(t *testing.T) {
	// The derived VM is "fedora-web-7c9d".
	rootName := "root-fedora-web-7c9d"
	dataName := "data-fedora-web-7c9d"
	for _, tc := range []struct {
		name          string
		templates     []kubevirtv1.DataVolumeTemplateSpec
		volumes       []kubevirtv1.Volume
		wantTemplates []kubevirtv1.DataVolumeTemplateSpec
		wantVolumes   []kubevirtv1.Volume
	}{
		{
			name:        "no templates, volumes unchanged",
			volumes:     []kubevirtv1.Volume{containerDiskVolume("root"), pvcVolume("seed", "seed", true)},
			wantVolumes: []kubevirtv1.Volume{containerDiskVolume("root"), pvcVolume("seed", "seed", true)},
		},
		{
			name:          "dataVolume references follow their template",
			templates:     []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", ""), dvTemplate("data", "")},
			volumes:       []kubevirtv1.Volume{dataVolumeVolume("rootdisk", "root"), dataVolumeVolume("datadisk", "data"), containerDiskVolume("tools")},
			wantTemplates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate(rootName, ""), dvTemplate(dataName, "")},
			wantVolumes:   []kubevirtv1.Volume{dataVolumeVolume("rootdisk", rootName), dataVolumeVolume("datadisk", dataName), containerDiskVolume("tools")},
		},
		{
			name:          "persistentVolumeClaim and ephemeral references to a template's claim follow it",
			templates:     []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", ""), dvTemplate("data", "")},
			volumes:       []kubevirtv1.Volume{pvcVolume("rootdisk", "root", false), ephemeralVolume("datadisk", "data"), ephemeralVolume("base", "golden")},
			wantTemplates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate(rootName, ""), dvTemplate(dataName, "")},
			wantVolumes:   []kubevirtv1.Volume{pvcVolume("rootdisk", rootName, false), ephemeralVolume("datadisk", dataName), ephemeralVolume("base", "golden")},
		},
		{
			name:          "a template's namespace is cleared so it follows the VM's",
			templates:     []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", "vms")},
			volumes:       []kubevirtv1.Volume{dataVolumeVolume("rootdisk", "root")},
			wantTemplates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate(rootName, "")},
			wantVolumes:   []kubevirtv1.Volume{dataVolumeVolume("rootdisk", rootName)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.DataVolumeTemplates = tc.templates
			proto.Spec.Template.Spec.Volumes = tc.volumes
			vm := mustVM(t, proto, testPod(), Options{})
			if diff := cmp.Diff(tc.wantTemplates, vm.Spec.DataVolumeTemplates); diff != "" {
				t.Errorf("dataVolumeTemplates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVolumes, vm.Spec.Template.Spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVMDataVolumeNamesDifferPerPod(t *testing.T) {
	proto := testPrototype()
	proto.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", "")}
	proto.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{dataVolumeVolume("rootdisk", "root")}
	other := testPod()
	other.Name, other.UID = "web-8f2a", "pod-uid-2"

	a := mustVM(t, proto, testPod(), Options{}).Spec.DataVolumeTemplates[0].Name
	b := mustVM(t, proto, other, Options{}).Spec.DataVolumeTemplates[0].Name
	if a == b {
		t.Errorf("two pods' VMs both got DataVolume %q", a)
	}
}

func TestVMSharedVolumes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		templates []kubevirtv1.DataVolumeTemplateSpec
		volumes   []kubevirtv1.Volume
		allow     bool
		want      []SharedVolume // nil: no error
	}{
		{
			name:    "containerDisk, ephemeral and read-only claims are not shared writable storage",
			volumes: []kubevirtv1.Volume{containerDiskVolume("root"), ephemeralVolume("base", "golden"), pvcVolume("seed", "seed", true)},
		},
		{
			name:    "a writable claim is refused",
			volumes: []kubevirtv1.Volume{containerDiskVolume("root"), pvcVolume("data", "shared-data", false)},
			want:    []SharedVolume{{Volume: "data", Source: "persistentVolumeClaim", Claim: "shared-data"}},
		},
		{
			name:    "an existing DataVolume is refused",
			volumes: []kubevirtv1.Volume{dataVolumeVolume("data", "existing")},
			want:    []SharedVolume{{Volume: "data", Source: "dataVolume", Claim: "existing"}},
		},
		{
			name:      "every offending volume is named, in order",
			templates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", "")},
			volumes: []kubevirtv1.Volume{
				dataVolumeVolume("rootdisk", "root"), pvcVolume("logs", "shared-logs", false),
				pvcVolume("seed", "seed", true), dataVolumeVolume("data", "existing"),
			},
			want: []SharedVolume{
				{Volume: "logs", Source: "persistentVolumeClaim", Claim: "shared-logs"},
				{Volume: "data", Source: "dataVolume", Claim: "existing"},
			},
		},
		{
			name:      "DataVolumes and claims made by a template are per VM",
			templates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("root", ""), dvTemplate("data", "")},
			volumes:   []kubevirtv1.Volume{dataVolumeVolume("rootdisk", "root"), pvcVolume("datadisk", "data", false)},
		},
		{
			name:    "allowed shared volumes pass",
			volumes: []kubevirtv1.Volume{pvcVolume("data", "shared-data", false), dataVolumeVolume("dv", "existing")},
			allow:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.DataVolumeTemplates = tc.templates
			proto.Spec.Template.Spec.Volumes = tc.volumes
			vm, err := VM(proto, testPod(), Options{AllowSharedVolumes: tc.allow})

			if tc.want == nil {
				if err != nil {
					t.Fatalf("VM() error: %v", err)
				}
				if vm == nil {
					t.Fatal("VM() returned no VM")
				}
				return
			}
			var shared *SharedVolumeError
			if !errors.As(err, &shared) {
				t.Fatalf("VM() error = %v, want a *SharedVolumeError", err)
			}
			if vm != nil {
				t.Errorf("VM() returned a VM with an error")
			}
			if diff := cmp.Diff(&SharedVolumeError{Prototype: "vms/fedora", Volumes: tc.want}, shared); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSharedVolumeErrorMessage(t *testing.T) {
	err := &SharedVolumeError{Prototype: "vms/fedora", Volumes: []SharedVolume{
		{Volume: "logs", Source: "persistentVolumeClaim", Claim: "shared-logs"},
		{Volume: "data", Source: "dataVolume", Claim: "existing"},
	}}
	want := `prototype vms/fedora: every derived VM would write to the same disk through ` +
		`volume "logs" (persistentVolumeClaim "shared-logs"), volume "data" (dataVolume "existing"); ` +
		`use containerDisk, ephemeral or dataVolumeTemplates instead, or pass --allow-shared-volumes to accept the risk`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
	if strings.ToLower(want[:1]) != want[:1] {
		t.Errorf("error must start lower-case: %q", want)
	}
}

// TestVMRefusesTemplatesOfOneCutName: two dataVolumeTemplates whose names
// agree up to the cut would both get one name for a Pod; derive refuses the
// prototype, saying which, rather than make one VM of two disks' worth of
// one claim.
func TestVMRefusesTemplatesOfOneCutName(t *testing.T) {
	long := strings.Repeat("d", contract.CutLength)
	proto := testPrototype()
	proto.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{dvTemplate(long+"-a", ""), dvTemplate(long+"-b", "")}
	_, err := VM(proto, testPod(), Options{})
	if err == nil || !strings.Contains(err.Error(), "would both be named") || !strings.Contains(err.Error(), long+"-b") {
		t.Fatalf("VM of a prototype with templates %s-a and -b: error %v, want one naming both", long, err)
	}
	proto.Spec.DataVolumeTemplates[1].Name = "short"
	if _, err := VM(proto, testPod(), Options{}); err != nil {
		t.Errorf("VM of a prototype with templates of other names: %v", err)
	}
}
