package revision

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
func add(s *Store, r *Revision) (string, error) {
	h, err := Hash(r)
	if err != nil {
		return "", err
	}
	s.Revisions[h] = r
	return h, nil
}
