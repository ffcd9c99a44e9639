package plugin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// TestScaffoldKeepsTheStoredRevisions: scaffold's store keeps every
// revision the workload's store holds, as stored, so that applying its
// output again drops none and changes none: also the one it pins, where a
// prototype deleted and made again, alike, has the same hash and another
// UID. One stored rewritten is written as it should be, with a warning.
func TestScaffoldKeepsTheStoredRevisions(t *testing.T) {
	proto := func() runtime.Object {
		return &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", UID: "new-uid"},
			Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
		}
	}
	args := []string{"deployment", "testvm", "-n", "vms"}
	out, _, err := runScaffoldWith(t, []runtime.Object{proto()}, args...)
	if err != nil {
		t.Fatal(err)
	}
	fresh := printedStore(t, out)
	hash := only(t, fresh)
	pinned := fresh.Revisions[hash]

	// The store as the first apply left it, with the prototype made again
	// since, and a revision an earlier rollout added.
	before := revision.NewStore("vms", "vmctl-testvm")
	old := pinned.DeepCopy()
	old.UID = "old-uid"
	earlier := pinned.DeepCopy()
	earlier.Labels = map[string]string{"tier": "earlier"}
	earlierHash, err := revision.Hash(earlier)
	if err != nil {
		t.Fatal(err)
	}
	before.Revisions[hash], before.Revisions[earlierHash] = old, earlier
	stored, err := before.Object()
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runScaffoldWith(t, []runtime.Object{proto(), stored}, args...)
	if err != nil || stderr != "" {
		t.Fatalf("scaffold: %v, stderr %q", err, stderr)
	}
	got := printedStore(t, out)
	if diff := cmp.Diff(before.Revisions, got.Revisions); diff != "" {
		t.Errorf("the store printed beside a stored one (-stored +printed):\n%s", diff)
	}

	// The pinned revision stored rewritten.
	rewritten := before.Revisions[hash]
	rewritten.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	if stored, err = before.Object(); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runScaffoldWith(t, []runtime.Object{proto(), stored}, args...)
	if err != nil {
		t.Fatal(err)
	}
	if want := "holds revision " + hash + " rewritten: kubectl apply will refuse to put it right; `kubectl vmctl rollout restart testvm` does"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want it to say %q", stderr, want)
	}
	got = printedStore(t, out)
	if diff := cmp.Diff(pinned, got.Revisions[hash]); diff != "" {
		t.Errorf("the pinned revision printed beside a rewritten one (-fresh +printed):\n%s", diff)
	}
	if got.Revisions[earlierHash] == nil {
		t.Errorf("the earlier revision %s was dropped", earlierHash)
	}
}

// printedStore is the VMRevisionStore among scaffold's YAML output.
func printedStore(t *testing.T, out string) *revision.Store {
	t.Helper()
	for doc := range strings.SplitSeq(out, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v:\n%s", err, doc)
		}
		if u.GetKind() == revision.StoreKind {
			s, err := revision.FromObject(u)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no %s in:\n%s", revision.StoreKind, out)
	return nil
}

// only is the hash of the one revision s holds.
func only(t *testing.T, s *revision.Store) string {
	t.Helper()
	if len(s.Revisions) != 1 {
		t.Fatalf("the printed store holds %v, want one revision", s.Hashes())
	}
	return s.Hashes()[0]
}
