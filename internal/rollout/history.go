package rollout

import (
	"cmp"
	"slices"
)

// Past is one template of a workload's history as its controller keeps
// it: a Deployment's ReplicaSet (Number its deployment.kubernetes.io/revision),
// a StatefulSet's or DaemonSet's ControllerRevision (Number its revision);
// Hash is the VM revision it pins, and Live is set while Pods of it run
// (replicas above 0, or a Pod's controller-revision-hash).
type Past struct {
	Hash   string
	Number int64
	Live   bool
}

// DefaultHistoryLimit is revisionHistoryLimit where a workload sets none,
// as the API server defaults it for all three kinds.
const DefaultHistoryLimit = 10

// Keep is what the revision store of a workload keeps when a rollout adds
// next: next, the revision its template pins now (current, which becomes
// old), those its live history pins, and those of the newest limit
// entries of the rest, as the controllers' own truncation keeps them
// (the Deployment controller's cleanupDeployment, the StatefulSet's and
// DaemonSet's truncateHistory): every template `kubectl rollout undo
// --to-revision` can still bring back names a revision the store holds.
// newest, the revision the store added last, stays too: a concurrent
// rollout may have added it and not yet written the template that names
// it. A negative limit is the default.
func Keep(next, current, newest string, past []Past, limit int32) map[string]bool {
	if limit < 0 {
		limit = DefaultHistoryLimit
	}
	keep := map[string]bool{}
	for _, h := range []string{next, current, newest} {
		if h != "" {
			keep[h] = true
		}
	}
	var old []Past
	for _, p := range past {
		if p.Live {
			keep[p.Hash] = true
			continue
		}
		old = append(old, p)
	}
	slices.SortFunc(old, func(a, b Past) int { return cmp.Compare(b.Number, a.Number) })
	for _, p := range old[:min(len(old), int(limit))] {
		if p.Hash != "" {
			keep[p.Hash] = true
		}
	}
	delete(keep, "")
	return keep
}
