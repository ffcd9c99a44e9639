package rollout

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// TestThreeHundredRestarts restarts a Deployment 300 times, each to a
// revision of 25 KB (the largest snapshot the store is sized for), and
// plays its controller between restarts: the new ReplicaSet is added and
// the old ones beyond revisionHistoryLimit (10) go, as cleanupDeployment
// does. The store, written by WithRevision, Truncate and WriteStore alone,
// stays within limit+2 revisions, and every ReplicaSet `kubectl rollout
// undo --to-revision` can bring back names a revision the store holds.
func TestThreeHundredRestarts(t *testing.T) {
	const restarts, limit, size = 300, 10, 25 << 10
	w := testWorkload()
	delete(w.Template().Annotations, contract.AnnotationVMRevision)
	dyn := fakeapi.NewDynamic()
	var history []Past // the ReplicaSets
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var largest int
	for i := 1; i <= restarts; i++ {
		tg := big(t, i, size)
		store, err := Store(t.Context(), dyn, w.Meta().GetNamespace(), w.Meta().GetName())
		if err != nil {
			t.Fatal(err)
		}
		if store != nil {
			store.SetUID("uid-1") // the fake sets none
		}
		s, _, err := WithRevision(store, w, tg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Truncate(s, store, w, tg, history, limit); err != nil {
			t.Fatal(err)
		}
		written, err := WriteStore(t.Context(), dyn, store, s, now.Add(time.Duration(i)*time.Second), nil)
		if err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		// The template pins it; the controller makes its ReplicaSet, scales
		// the old ones to 0 and keeps the newest limit of them.
		w.Template().Annotations[contract.AnnotationVMRevision] = tg.Hash
		history = append(history, Past{Hash: tg.Hash, Number: int64(i)})
		if len(history) > limit+1 {
			history = history[len(history)-limit-1:]
		}
		data, err := json.Marshal(written.Object)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(data))
		got, err := revision.FromObject(written)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Revisions); n > limit+2 {
			t.Fatalf("restart %d: the store holds %d revisions, want at most %d", i, n, limit+2)
		}
		for _, rs := range history {
			if got.Revisions[rs.Hash] == nil {
				t.Fatalf("restart %d: ReplicaSet %d pins %s, which the store lacks: rollout undo --to-revision=%d would find no VM revision", i, rs.Number, rs.Hash, rs.Number)
			}
		}
	}
	// limit+2 revisions of 25 KB, with room for the object around them.
	if bound := (limit + 2) * (size + 4<<10); largest > bound {
		t.Errorf("the store grew to %d bytes, want at most %d", largest, bound)
	}
	t.Logf("largest store over %d restarts: %d bytes", restarts, largest)
}

// big is a target whose revision, of tag i, is about size bytes.
func big(t *testing.T, i, size int) Target {
	t.Helper()
	rev := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: ns,
		Annotations: map[string]string{"padding": strings.Repeat("x", size), "n": fmt.Sprint(i)}}}
	hash, err := revision.Hash(rev)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Pinned: prototype.Pinned{Snapshot: rev, Hash: hash}}
}
