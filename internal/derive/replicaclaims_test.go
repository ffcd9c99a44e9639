package derive

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestVMUsesThePodsOwnClaims(t *testing.T) {
	proto := testPrototype()
	proto.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{
		containerDiskVolume("root"), pvcVolume("data", "data", false), pvcVolume("seed", "seed", true), ephemeralVolume("scratch", "cache"),
	}
	pod := testPod()
	vm, err := VM(proto, pod, Options{ReplicaClaims: []string{"data", "cache"}})
	if err != nil {
		t.Fatalf("VM: %v", err)
	}
	want := []kubevirtv1.Volume{
		containerDiskVolume("root"), pvcVolume("data", "data-"+pod.Name, false), pvcVolume("seed", "seed", true), ephemeralVolume("scratch", "cache-"+pod.Name),
	}
	if diff := cmp.Diff(want, vm.Spec.Template.Spec.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if got := proto.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName; got != "data" {
		t.Errorf("the prototype's claim became %q: VM must not change the prototype", got)
	}
}

func TestVMOwnClaimIsNotShared(t *testing.T) {
	proto := testPrototype()
	proto.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{pvcVolume("data", "data", false), pvcVolume("logs", "logs", false)}
	// The writable claim the workload does not make per replica is still
	// every VM's.
	_, err := VM(proto, testPod(), Options{ReplicaClaims: []string{"data"}})
	var shared *SharedVolumeError
	if !errors.As(err, &shared) {
		t.Fatalf("VM: got %v, want a SharedVolumeError for logs", err)
	}
	if diff := cmp.Diff([]SharedVolume{{Volume: "logs", Source: "persistentVolumeClaim", Claim: "logs"}}, shared.Volumes); diff != "" {
		t.Errorf("shared volumes (-want +got):\n%s", diff)
	}
	if _, err := VM(proto, testPod(), Options{ReplicaClaims: []string{"data", "logs"}}); err != nil {
		t.Errorf("VM with both claims per replica: %v", err)
	}
}

func TestVMRefusesAReplicaClaimThePrototypeLacks(t *testing.T) {
	proto := testPrototype()
	proto.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{pvcVolume("data", "data", false), dataVolumeVolume("dv", "disk")}
	// A dataVolume volume names a DataVolume, which no StatefulSet makes.
	_, err := VM(proto, testPod(), Options{ReplicaClaims: []string{"data", "disk"}})
	var rc *ReplicaClaimError
	if !errors.As(err, &rc) {
		t.Fatalf("VM: got %v, want a ReplicaClaimError", err)
	}
	if diff := cmp.Diff([]string{"disk"}, rc.Missing); diff != "" {
		t.Errorf("missing claims (-want +got):\n%s", diff)
	}
	for _, want := range []string{"no persistentVolumeClaim volume names claim disk", "its persistentVolumeClaim volumes name data", "--replica-claim"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
