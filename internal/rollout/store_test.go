package rollout

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
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
	if err != nil || !changed || !slices.Equal(next.Hashes(), []string{"h2", "h3"}) {
		t.Errorf("adding h3: %+v changed %v err %v, want h2 and h3", next, changed, err)
	}
	if next.Revisions["h3"] != target("h3").Revision && next.Revisions["h3"].Name != "testvm" {
		t.Errorf("the store holds %+v as h3", next.Revisions["h3"])
	}
	if _, err := revision.FromObject(cur); err != nil {
		t.Fatal(err)
	}
}

// TestWriteStore: the first revision creates the store; a later one is
// added with one merge patch that names only it, stamped with the time
// it was stored, on condition that the store is the one read.
func TestWriteStore(t *testing.T) {
	w := testWorkload()
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dyn := fakeapi.NewDynamic()
	s, _, _ := WithRevision(nil, w, target("h2"))
	cur, err := WriteStore(t.Context(), dyn, nil, s, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur.SetUID("uid-1") // the fake sets none
	next, _, _ := WithRevision(cur, w, target("h3"))
	dyn.ClearActions()
	got, err := WriteStore(t.Context(), dyn, cur, next, first.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if acts := dyn.Actions(); len(acts) != 1 || acts[0].GetVerb() != "patch" {
		t.Fatalf("requests %v, want one patch", acts)
	}
	patch := string(dyn.Actions()[0].(k8stesting.PatchAction).GetPatch())
	if strings.Contains(patch, `"h2"`) || !strings.Contains(patch, `"h3"`) || !strings.Contains(patch, `"uid":"uid-1"`) {
		t.Errorf("patch %s, want h3 alone, on condition of the store's uid", patch)
	}
	store, err := revision.FromObject(got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(store.Hashes(), []string{"h2", "h3"}) {
		t.Errorf("the store holds %v, want h2 and h3", store.Hashes())
	}
	for h, want := range map[string]time.Time{"h2": first, "h3": first.Add(time.Hour)} {
		if at := store.Revisions[h].CreationTimestamp.Time; !at.Equal(want) {
			b, _ := json.Marshal(store.Revisions[h].ObjectMeta)
			t.Errorf("%s stored at %v, want %v (%s)", h, at, want, b)
		}
	}
	if !next.Revisions["h3"].CreationTimestamp.IsZero() {
		t.Error("WriteStore stamped the revision it was given, not a copy")
	}
}

// TestWriteStoreWithoutTheCRD: on a cluster without the stores' CRD, the
// create is refused as not found, and the error says what installs it.
func TestWriteStoreWithoutTheCRD(t *testing.T) {
	dyn := fakeapi.NewDynamic()
	dyn.PrependReactor("create", revision.StoreResource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(revision.StoreGVR.GroupResource(), "")
	})
	s, _, _ := WithRevision(nil, testWorkload(), target("h2"))
	_, err := WriteStore(t.Context(), dyn, nil, s, time.Now(), nil)
	if err == nil || !strings.Contains(err.Error(), "the cluster lacks CRD vmrevisionstores.vmctl.kubevirt.io") {
		t.Errorf("WriteStore without the CRD: %v, want it to name the CRD", err)
	}
}
