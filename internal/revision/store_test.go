package revision

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestStoreRoundTrip(t *testing.T) {
	s := NewStore("vms", "web")
	first, err := add(s, Snapshot(prototype()))
	if err != nil {
		t.Fatal(err)
	}
	p := prototype()
	p.Spec.Template.Spec.Domain.CPU.Cores = 4
	second, err := add(s, Snapshot(p))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Hashes(), sorted(first, second); !cmp.Equal(want, got) {
		t.Errorf("hashes %v, want %v", got, want)
	}
	u, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	if u.GetName() != "web-vm-revisions" || u.GetNamespace() != "vms" || u.GetKind() != StoreKind || u.GetAPIVersion() != "vmctl.kubevirt.io/v1alpha1" {
		t.Errorf("the store's object is %s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
	}
	if _, ok := u.GetLabels()[contract.LabelInstance]; ok {
		t.Errorf("the store is labelled %s, which the workload's selector matches", contract.LabelInstance)
	}
	if len(u.GetOwnerReferences()) != 0 {
		t.Errorf("the store has owners %v", u.GetOwnerReferences())
	}
	if strings.Contains(fmt.Sprint(u.Object), "<nil>") {
		t.Errorf("the store holds nulls, which the API server prunes: %v", u.Object)
	}
	back, err := FromObject(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("the store read back differs (-written +read):\n%s", diff)
	}
}

func TestStoreRetain(t *testing.T) {
	s := NewStore("vms", "web")
	keep, _ := add(s, Snapshot(prototype()))
	p := prototype()
	p.Labels["release"] = "v2"
	drop, _ := add(s, Snapshot(p))
	if s.Retain(map[string]bool{keep: true, drop: true}) {
		t.Error("Retain of every revision says some went")
	}
	if !s.Retain(map[string]bool{keep: true, "0123456789": true}) {
		t.Error("Retain without one revision says none went")
	}
	if got := s.Hashes(); !cmp.Equal([]string{keep}, got) {
		t.Errorf("after Retain the store holds %v, want [%s]", got, keep)
	}
}

func TestFromObjectRefusesWhatItCannotRead(t *testing.T) {
	u, _ := NewStore("vms", "web").Object()
	u.Object["spec"] = map[string]any{"revisions": []any{int64(1), int64(2)}}
	if _, err := FromObject(u); err == nil {
		t.Error("a store whose revisions are a list was read without error")
	}
}

func sorted(a, b string) []string {
	if a > b {
		a, b = b, a
	}
	return []string{a, b}
}

// add puts r in s under its hash, which it returns, as a rollout does.
func add(s *Store, r *kubevirtv1.VirtualMachine) (string, error) {
	h, err := Hash(r)
	if err != nil {
		return "", err
	}
	s.Revisions[h] = r
	return h, nil
}

// TestVerify: a revision held under the hash of its content verifies, also
// as the API server stores it and hands it back; one rewritten under a
// hash it was first rolled out as (pruned, then added again with other
// content) is named, with what its content hashes to.
func TestVerify(t *testing.T) {
	proto := prototype()
	r := Snapshot(proto)
	hash, err := Hash(r)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore("vms", "web")
	s.Revisions[hash] = r
	obj, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := FromObject(roundTrip(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	if err := stored.Verify(hash); err != nil {
		t.Fatalf("Verify of an honest revision after a round trip: %v", err)
	}
	if got := stored.Rewritten(); len(got) != 0 {
		t.Errorf("Rewritten() = %v, want none", got)
	}

	rewritten := r.DeepCopy()
	rewritten.Spec.Template.Spec.Domain.Devices.Disks = append(rewritten.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "cloudinit"})
	actual, err := Hash(rewritten)
	if err != nil {
		t.Fatal(err)
	}
	stored.Revisions[hash] = rewritten
	err = stored.Verify(hash)
	var rerr *RewrittenError
	if !errors.As(err, &rerr) || rerr.Hash != hash || rerr.Actual != actual || rerr.Store != "vms/web-vm-revisions" {
		t.Fatalf("Verify of a rewritten revision = %v, want a RewrittenError of %s, hashing to %s", err, hash, actual)
	}
	if !strings.Contains(err.Error(), "kubectl vmctl rollout restart "+proto.Name) {
		t.Errorf("the error %q does not say what puts it right", err)
	}
	if diff := cmp.Diff(map[string]string{hash: actual}, stored.Rewritten()); diff != "" {
		t.Errorf("Rewritten() (-want +got):\n%s", diff)
	}
	if err := stored.Verify("0000000000"); err != nil {
		t.Errorf("Verify of a revision the store lacks = %v, want nil: missing is another state", err)
	}
}

// roundTrip is u as the API server hands back what was written: JSON, read
// into an unstructured object.
func roundTrip(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	back := &unstructured.Unstructured{}
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return back
}
