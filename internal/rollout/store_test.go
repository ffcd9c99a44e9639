package rollout

import (
	"slices"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// TestWithRevision: a restart adds its revision to the workload's store,
// keeping the others, and writes it only when it lacks the revision.
func TestWithRevision(t *testing.T) {
	w := testWorkload()
	s, changed, err := WithRevision(nil, w, target("h2"))
	if err != nil || !changed || s.Name != "web-vm-revisions" || s.Namespace != ns || !slices.Equal(s.Hashes(), []string{"h2"}) {
		t.Fatalf("a new store: %+v changed %v err %v, want web-vm-revisions in %s holding h2", s, changed, err, ns)
	}
	cur, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, _ := WithRevision(cur, w, target("h2")); changed {
		t.Error("a store that holds the revision changed")
	}
	next, changed, err := WithRevision(cur, w, target("h3"))
	if err != nil || !changed || !slices.Equal(next.Hashes(), []string{"h2", "h3"}) || next.Number != s.Number+1 {
		t.Errorf("adding h3: %+v changed %v err %v, want h2 and h3, number %d", next, changed, err, s.Number+1)
	}
	if next.Revisions["h3"] != target("h3").Revision && next.Revisions["h3"].Name != "testvm" {
		t.Errorf("the store holds %+v as h3", next.Revisions["h3"])
	}
	if _, err := revision.FromObject(cur); err != nil {
		t.Fatal(err)
	}
}
