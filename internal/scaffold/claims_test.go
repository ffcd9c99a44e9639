package scaffold

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestParseReplicaClaim(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    ReplicaClaim
		wantErr string
	}{
		{in: "data=20Gi", want: ReplicaClaim{Name: "data", Size: resource.MustParse("20Gi"), AccessMode: corev1.ReadWriteOnce, VolumeMode: corev1.PersistentVolumeFilesystem}},
		{in: "disk=1Ti,class=local,access=ReadWriteMany,mode=Block", want: ReplicaClaim{Name: "disk", Size: resource.MustParse("1Ti"),
			StorageClass: ptr.To("local"), AccessMode: corev1.ReadWriteMany, VolumeMode: corev1.PersistentVolumeBlock}},
		{in: "data=20Gi,class=", want: ReplicaClaim{Name: "data", Size: resource.MustParse("20Gi"), StorageClass: ptr.To(""),
			AccessMode: corev1.ReadWriteOnce, VolumeMode: corev1.PersistentVolumeFilesystem}},
		{in: "data", wantErr: "names no claim and size: use CLAIM=SIZE"},
		{in: "data=big", wantErr: `claim data: size "big"`},
		{in: "data=1Gi,zone=a", wantErr: `claim data: unknown option "zone=a"`},
	} {
		got, err := ParseReplicaClaim(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseReplicaClaim(%q): got %v, want an error saying %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseReplicaClaim(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseReplicaClaim(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// claimPrototype is a revision with a writable claim "data" and a
// dataVolume "disk".
func claimPrototype() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"}, Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
			{Name: "data", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			{Name: "disk", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "disk"}}},
		}},
	}}}
}

func dataClaim(change func(*ReplicaClaim)) func(*Params) {
	return func(p *Params) {
		c := ReplicaClaim{Name: "data", Size: resource.MustParse("20Gi"), AccessMode: corev1.ReadWriteOnce, VolumeMode: corev1.PersistentVolumeFilesystem}
		if change != nil {
			change(&c)
		}
		p.ReplicaClaims = append(p.ReplicaClaims, c)
	}
}

func TestValidateReplicaClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    Kind
		change  []func(*Params)
		wantErr []string
	}{
		{name: "a StatefulSet's claim", kind: KindStatefulSet, change: []func(*Params){dataClaim(nil)}},
		{name: "Block, ReadWriteMany", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) {
			c.VolumeMode, c.AccessMode = corev1.PersistentVolumeBlock, corev1.ReadWriteMany
		})}},
		{name: "a Deployment's", kind: KindDeployment, change: []func(*Params){dataClaim(nil)},
			wantErr: []string{"--replica-claim needs a StatefulSet", "scaffold statefulset instead", "dataVolumeTemplate"}},
		{name: "a DaemonSet's", kind: KindDaemonSet, change: []func(*Params){dataClaim(nil)}, wantErr: []string{"--replica-claim needs a StatefulSet"}},
		{name: "ReadWriteOncePod", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) { c.AccessMode = corev1.ReadWriteOncePod })},
			wantErr: []string{"ReadWriteOncePod lets one Pod only use the volume", "launcher Pod would never be scheduled", "use ReadWriteOnce"}},
		{name: "ReadOnlyMany", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) { c.AccessMode = corev1.ReadOnlyMany })},
			wantErr: []string{`access "ReadOnlyMany": use ReadWriteOnce or ReadWriteMany`}},
		{name: "no size", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) { c.Size = resource.Quantity{} })},
			wantErr: []string{"give a positive size"}},
		{name: "mode", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) { c.VolumeMode = "Raw" })},
			wantErr: []string{`mode "Raw": use Filesystem or Block`}},
		{name: "twice", kind: KindStatefulSet, change: []func(*Params){dataClaim(nil), dataClaim(nil)}, wantErr: []string{"claim data is given twice"}},
		{name: "too long a name", kind: KindStatefulSet, change: []func(*Params){dataClaim(func(c *ReplicaClaim) { c.Name = strings.Repeat("d", 250) })},
			wantErr: []string{"no valid PersistentVolumeClaim names"}},
		{name: "a claim the prototype lacks", kind: KindStatefulSet, change: []func(*Params){
			func(p *Params) { p.Snapshot = claimPrototype() }, dataClaim(func(c *ReplicaClaim) { c.Name = "disk" })},
			wantErr: []string{"no persistentVolumeClaim volume names claim disk", "its persistentVolumeClaim volumes name data"}},
		{name: "a claim the prototype has", kind: KindStatefulSet, change: []func(*Params){func(p *Params) { p.Snapshot = claimPrototype() }, dataClaim(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validParams(tc.kind)
			for _, c := range tc.change {
				c(&p)
			}
			err := p.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: no error, want %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestStatefulSetMakesTheClaimsPerReplica: the claims become the
// StatefulSet's volumeClaimTemplates, with its retention policy, and the
// agent's --replica-claims names them.
func TestStatefulSetMakesTheClaimsPerReplica(t *testing.T) {
	p := validParams(KindStatefulSet)
	dataClaim(func(c *ReplicaClaim) { c.StorageClass, c.VolumeMode = ptr.To("local"), corev1.PersistentVolumeBlock })(&p)
	p.ClaimsWhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	sts := find[*appsv1.StatefulSet](t, mustBuild(t, p), p.Namespace, p.Name)
	want := []corev1.PersistentVolumeClaim{{
		ObjectMeta: sts.Spec.VolumeClaimTemplates[0].ObjectMeta,
		TypeMeta:   sts.Spec.VolumeClaimTemplates[0].TypeMeta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("local"),
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}},
		},
	}}
	if diff := cmp.Diff(want, sts.Spec.VolumeClaimTemplates); diff != "" {
		t.Errorf("volumeClaimTemplates (-want +got):\n%s", diff)
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Name; got != "data" {
		t.Errorf("the template is named %q, want data: the StatefulSet names each Pod's claim <template>-<pod>", got)
	}
	wantRetention := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	if diff := cmp.Diff(wantRetention, sts.Spec.PersistentVolumeClaimRetentionPolicy); diff != "" {
		t.Errorf("retention policy (-want +got):\n%s", diff)
	}
	args := sts.Spec.Template.Spec.Containers[0].Args
	if !strings.Contains(strings.Join(args, " "), "--"+contract.FlagReplicaClaims+"=data") {
		t.Errorf("agent args %q lack --%s=data", args, contract.FlagReplicaClaims)
	}
	// The agent container mounts no claim: the kubelet mounts only what a
	// container uses, and the launcher Pod mounts the volume.
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.Name == "data" {
			t.Errorf("the agent container mounts the claim: %+v", m)
		}
	}

	plain := find[*appsv1.StatefulSet](t, mustBuild(t, validParams(KindStatefulSet)), p.Namespace, p.Name)
	if plain.Spec.VolumeClaimTemplates != nil || plain.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		t.Errorf("a StatefulSet without replica claims has claim templates or a retention policy: %+v", plain.Spec)
	}
}
