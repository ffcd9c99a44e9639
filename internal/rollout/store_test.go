package rollout

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// stored is a target whose revision is testvm labelled release=tag, under
// the hash of its content, as rollout restart takes it: what a store
// holds verified.
func stored(t *testing.T, tag string) Target {
	t.Helper()
	rev := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: ns, Labels: map[string]string{"release": tag}}}
	hash, err := revision.Hash(rev)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Pinned: prototype.Pinned{Snapshot: rev, Hash: hash}}
}

// TestWithRevision: a restart adds its revision to the workload's store,
// keeping the others, and writes it only when it lacks the revision, or
// holds it rewritten.
func TestWithRevision(t *testing.T) {
	w := testWorkload()
	t2, t3 := stored(t, "v2"), stored(t, "v3")
	s, changed, err := WithRevision(nil, w, t2)
	if err != nil || !changed || s.Name != "web-vm-revisions" || s.Namespace != ns || !slices.Equal(s.Hashes(), []string{t2.Hash}) {
		t.Fatalf("a new store: %+v changed %v err %v, want web-vm-revisions in %s holding %s", s, changed, err, ns, t2.Hash)
	}
	cur, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, _ := WithRevision(cur, w, t2); changed {
		t.Error("a store that holds the revision changed")
	}
	next, changed, err := WithRevision(cur, w, t3)
	if err != nil || !changed || !slices.Equal(next.Hashes(), slices.Sorted(slices.Values([]string{t2.Hash, t3.Hash}))) {
		t.Errorf("adding %s: %+v changed %v err %v, want both", t3.Hash, next, changed, err)
	}
	if next.Revisions[t3.Hash].Labels["release"] != "v3" {
		t.Errorf("the store holds %+v as %s", next.Revisions[t3.Hash], t3.Hash)
	}
	rewritten := s.Revisions[t2.Hash].DeepCopy()
	rewritten.Labels["release"] = "evil"
	s.Revisions[t2.Hash] = rewritten
	if cur, err = s.Object(); err != nil {
		t.Fatal(err)
	}
	again, changed, err := WithRevision(cur, w, t2)
	if err != nil || !changed || again.Verify(t2.Hash) != nil {
		t.Errorf("a store that holds the revision rewritten: changed %v err %v, verifies %v; want it written anew", changed, err, again.Verify(t2.Hash))
	}
}

// TestWriteStore: the first revision creates the store; a later one is
// added with one merge patch that names only it, stamped with the time
// it was stored, on condition that the store is the one read.
func TestWriteStore(t *testing.T) {
	w := testWorkload()
	t2, t3 := stored(t, "v2"), stored(t, "v3")
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dyn := fakeapi.NewDynamic()
	s, _, _ := WithRevision(nil, w, t2)
	cur, err := WriteStore(t.Context(), dyn, nil, s, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur.SetUID("uid-1") // the fake sets none
	next, _, _ := WithRevision(cur, w, t3)
	dyn.ClearActions()
	got, err := WriteStore(t.Context(), dyn, cur, next, first.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if acts := dyn.Actions(); len(acts) != 1 || acts[0].GetVerb() != "patch" {
		t.Fatalf("requests %v, want one patch", acts)
	}
	patch := string(dyn.Actions()[0].(k8stesting.PatchAction).GetPatch())
	if strings.Contains(patch, `"`+t2.Hash+`"`) || !strings.Contains(patch, `"`+t3.Hash+`"`) || !strings.Contains(patch, `"uid":"uid-1"`) {
		t.Errorf("patch %s, want %s alone, on condition of the store's uid", patch, t3.Hash)
	}
	store, err := revision.FromObject(got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(store.Hashes(), slices.Sorted(slices.Values([]string{t2.Hash, t3.Hash}))) {
		t.Errorf("the store holds %v, want %s and %s", store.Hashes(), t2.Hash, t3.Hash)
	}
	for h, want := range map[string]time.Time{t2.Hash: first, t3.Hash: first.Add(time.Hour)} {
		if at := store.Revisions[h].CreationTimestamp.Time; !at.Equal(want) {
			b, _ := json.Marshal(store.Revisions[h].ObjectMeta)
			t.Errorf("%s stored at %v, want %v (%s)", h, at, want, b)
		}
	}
	if !next.Revisions[t3.Hash].CreationTimestamp.IsZero() {
		t.Error("WriteStore stamped the revision it was given, not a copy")
	}
}

// TestWriteStoreRewritten: a store that holds the revision a restart pins
// rewritten gets it anew in two writes, as the API server refuses a change
// to a retained revision but not its removal: a patch that removes it, on
// condition that the store is the one read (its resourceVersion), then
// the patch that adds it. A server dry run sends the first alone.
func TestWriteStoreRewritten(t *testing.T) {
	w := testWorkload()
	t2 := stored(t, "v2")
	dyn := fakeapi.NewDynamic()
	honest, _, _ := WithRevision(nil, w, t2)
	bad := honest.Revisions[t2.Hash].DeepCopy()
	bad.Labels["release"] = "evil"
	honest.Revisions[t2.Hash] = bad
	cur, err := WriteStore(t.Context(), dyn, nil, honest, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur.SetUID("uid-1")
	cur.SetResourceVersion("7")
	for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
		next, changed, err := WithRevision(cur, w, t2)
		if err != nil || !changed {
			t.Fatalf("WithRevision of a rewritten revision: changed %v, err %v", changed, err)
		}
		dyn.ClearActions()
		got, err := WriteStore(t.Context(), dyn, cur, next, time.Now(), dryRun)
		if err != nil {
			t.Fatal(err)
		}
		var patches []string
		for _, a := range dyn.Actions() {
			if p, ok := a.(k8stesting.PatchAction); ok {
				patches = append(patches, string(p.GetPatch()))
			}
		}
		want := 2
		if dryRun != nil {
			want = 1
		}
		if len(patches) != want || !strings.Contains(patches[0], `"`+t2.Hash+`":null`) || !strings.Contains(patches[0], `"resourceVersion":"7"`) {
			t.Fatalf("dry run %v: patches %q, want the removal of %s on condition of resourceVersion 7, then its addition", dryRun, patches, t2.Hash)
		}
		if dryRun != nil {
			continue
		}
		if !strings.Contains(patches[1], `"release":"v2"`) {
			t.Errorf("second patch %s, want the revision as its hash says", patches[1])
		}
		s, err := revision.FromObject(got)
		if err != nil || s.Verify(t2.Hash) != nil {
			t.Errorf("the store written: %v, verifies %v", err, s.Verify(t2.Hash))
		}
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
