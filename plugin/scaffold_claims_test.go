package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// claimPrototype is a prototype in vms with a writable claim "data".
func claimPrototype() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{{
				Name: "data", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
				}},
			}}},
		}},
	}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/" + name, VolumeBindingMode: ptr.To(mode)}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	return sc
}

func TestScaffoldReplicaClaims(t *testing.T) {
	local := storageClass("local", storagev1.VolumeBindingWaitForFirstConsumer, false)
	network := storageClass("network", storagev1.VolumeBindingImmediate, true)
	cluster := []runtime.Object{claimPrototype(), local, network}
	for _, tc := range []struct {
		name       string
		args       []string
		wantOut    []string
		wantStderr []string // none: stderr empty
		wantErr    []string
	}{
		{name: "a StatefulSet's claim, on network storage", args: []string{"sts", "testvm", "--replica-claim", "data=20Gi", "--claims-when-scaled=delete"},
			wantOut: []string{"volumeClaimTemplates:", "name: data\n", "storage: 20Gi", "volumeMode: Filesystem", "- ReadWriteOnce",
				"persistentVolumeClaimRetentionPolicy:", "whenDeleted: Retain", "whenScaled: Delete", "--replica-claims=data"}},
		{name: "on node-local storage, moving", args: []string{"sts", "testvm", "--replica-claim", "data=20Gi,class=local,mode=Block"},
			wantOut: []string{"storageClassName: local", "volumeMode: Block", "--move-after=5m0s"},
			wantStderr: []string{"--move-after=5m0s: claim data is of storage class local, whose volumes are bound to a node or zone",
				"volumeBindingMode WaitForFirstConsumer", "pass --move-after=0"}},
		{name: "on node-local storage, not moving", args: []string{"sts", "testvm", "--replica-claim", "data=20Gi,class=local", "--move-after=0"},
			wantOut: []string{"storageClassName: local"}},
		{name: "a Deployment's", args: []string{"deploy", "testvm", "--replica-claim", "data=20Gi"},
			wantErr: []string{"cannot scaffold deployment", "--replica-claim needs a StatefulSet", "scaffold statefulset instead"}},
		{name: "a DaemonSet's", args: []string{"ds", "testvm", "--replica-claim", "data=20Gi"}, wantErr: []string{"--replica-claim needs a StatefulSet"}},
		{name: "ReadWriteOncePod", args: []string{"sts", "testvm", "--replica-claim", "data=20Gi,access=ReadWriteOncePod"},
			wantErr: []string{"ReadWriteOncePod", "launcher Pod would never be scheduled"}},
		{name: "a claim the prototype lacks", args: []string{"sts", "testvm", "--replica-claim", "cache=1Gi"},
			wantErr: []string{"prototype vms/testvm: no persistentVolumeClaim volume names claim cache", "its persistentVolumeClaim volumes name data"}},
		{name: "bad syntax", args: []string{"sts", "testvm", "--replica-claim", "data"}, wantErr: []string{"--replica-claim:", "CLAIM=SIZE"}},
		{name: "retention without claims", args: []string{"sts", "testvm", "--claims-when-deleted=Delete"},
			wantErr: []string{"--claims-when-deleted applies to the claims --replica-claim makes"}},
		{name: "bad retention", args: []string{"sts", "testvm", "--replica-claim", "data=1Gi", "--claims-when-scaled=keep"},
			wantErr: []string{`--claims-when-scaled: "keep" is no retention policy: use Retain or Delete`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := runScaffoldWith(t, cluster, append(tc.args, "-n", "vms")...)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("scaffold %v succeeded, want an error", tc.args)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if out != "" {
					t.Errorf("printed manifests before failing")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("manifests lack %q", w)
				}
			}
			if len(tc.wantStderr) == 0 && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}
