package testcluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// StaticVolume is one statically provisioned PersistentVolume of a
// StaticVolumes class.
type StaticVolume struct {
	Size resource.Quantity
	Mode corev1.PersistentVolumeMode
	// Source is where the data is: a local path, or a network share.
	Source corev1.PersistentVolumeSource
	// Node, when set, is the one node the volume can be used on, as a
	// local volume's; empty means any node, as network storage.
	Node string
}

// StaticVolumes creates a StorageClass class of statically provisioned
// volumes (no provisioner), which binds claims as binding says, and one
// ReadWriteOnce PersistentVolume of it for each of volumes, named
// <class>-<index>, kept when released; it deletes them when t ends.
func StaticVolumes(t testing.TB, c kubernetes.Interface, class string, binding storagev1.VolumeBindingMode, volumes ...StaticVolume) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: ptr.To(binding)}
	if _, err := c.StorageV1().StorageClasses().Create(t.Context(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{}) })
	for i, v := range volumes {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", class, i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: v.Size},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName:              class,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				VolumeMode:                    ptr.To(v.Mode),
				PersistentVolumeSource:        v.Source,
			},
		}
		if v.Node != "" {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{v.Node}}},
			}}}}
		}
		if _, err := c.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
}
