//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The chaos soak's size: VMCTL_SOAK_OPS operations (make e2e runs the
// default, make soak 1,000), chosen by a generator seeded with
// VMCTL_SOAK_SEED (default: the clock; always printed).
const (
	soakOpsEnv  = "VMCTL_SOAK_OPS"
	soakSeedEnv = "VMCTL_SOAK_SEED"
	// soakLogsEnv names a directory where a failed soak keeps the
	// cluster's logs (make soak: .soak-logs).
	soakLogsEnv  = "VMCTL_SOAK_LOGS"
	soakOpsShort = 100
	// soakShortRun: runs of fewer operations draw slow kinds (soakOp.slow)
	// only in their first round, to keep make e2e's soak to minutes.
	soakShortRun  = 200
	soakSettleMax = 3 * time.Minute
)

// TestSoak runs a seeded random sequence of operations (scaling, node churn,
// drains, Pod deletions of every kind, agent crashes and freezes, hand edits
// and deletions of VMs and prototypes, control-plane restarts, etcd
// compaction, hand-made VMs with names vmctl derives) against Deployment,
// StatefulSet and DaemonSet agents, and after each one waits for the
// cluster to settle and checks every invariant (see soak_invariants_test.go)
// and the agents' requests (soak_requests_test.go). The first operations
// go through every kind once, whatever the seed; the rest are drawn by
// weight. A failure prints the seed and the operation log: the same seed
// replays the same choices (which Pod or node is picked is the i-th by
// name, so a replay picks the same roles, not the same random names).
func TestSoak(t *testing.T) {
	ops, err := envPositive(soakOpsEnv, soakOpsShort)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(soakSeedEnv); v != "" {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want an unsigned integer: %v", soakSeedEnv, v, err)
		}
	}
	t.Logf("soak: %d operations, seed %d (replay: %s=%d %s=%d)", ops, seed, soakSeedEnv, seed, soakOpsEnv, ops)

	// Registered first, so it runs last, after the agents' logs: CI shows
	// the end of a failed run's output.
	var s *soak
	t.Cleanup(func() {
		if t.Failed() && s != nil {
			if s.failure == "" {
				s.failure = "see the errors above" // a request budget's t.Errorf
			}
			kept := ""
			if dir := os.Getenv(soakLogsEnv); dir != "" {
				dir = filepath.Join(dir, fmt.Sprintf("%d-%s", seed, time.Now().Format("20060102-150405")))
				n, err := keepLogs(e.cluster.Dir, dir)
				kept = fmt.Sprintf("\nthe cluster's logs (%d files, error %v) are kept in %s", n, err, dir)
			}
			t.Logf("soak FAILED after %d operations: %s\nseed %d; replay with %s=%d %s=%d%s\noperation log:\n%s",
				len(s.log), s.failure, seed, soakSeedEnv, seed, soakOpsEnv, ops, kept, strings.Join(s.log, "\n"))
		}
	})
	s = newSoak(t, seed)
	start := time.Now()
	s.setUp()
	t.Logf("soak: set up in %v", time.Since(start).Round(100*time.Millisecond))
	s.checkStep("set-up", start)

	kinds := soakOps()
	for i := range ops {
		var op soakOp
		if i < len(kinds) {
			op = kinds[i] // every kind once, in a fixed order
		} else {
			op = s.pick(kinds, ops < soakShortRun)
		}
		if !op.can(s) {
			op = s.pick(kinds, ops < soakShortRun)
		}
		began := time.Now()
		what, err := op.run(s)
		s.counts[op.name]++
		s.log = append(s.log, fmt.Sprintf("#%d %s %s: %s", i+1, began.Format("15:04:05.0"), op.name, what))
		t.Log(s.log[len(s.log)-1])
		if err != nil {
			s.fatalf("operation #%d %s (%s): %v", i+1, op.name, what, err)
		}
		settled := s.checkStep(op.name, began)
		s.log[len(s.log)-1] += fmt.Sprintf(" (settled in %v)", settled.Round(100*time.Millisecond))
	}
	s.quietWindow()
	s.report(t, time.Since(start))
	if s.reservationsCompared == 0 {
		t.Error("no agent Pod's room was compared with its launcher Pod's: the reservation invariant checked nothing")
	}
}

// fatalf fails the soak, keeping why for the report at its end.
func (s *soak) fatalf(format string, args ...any) {
	s.t.Helper()
	s.failure = fmt.Sprintf(format, args...)
	s.t.Fatal(s.failure)
}

// report logs what ran and what was checked.
func (s *soak) report(t *testing.T, took time.Duration) {
	var kinds []string
	for _, op := range soakOps() {
		kinds = append(kinds, fmt.Sprintf("%s=%d", op.name, s.counts[op.name]))
	}
	var verbs []string
	for v, n := range s.requests.byVerb {
		verbs = append(verbs, fmt.Sprintf("%s=%d", v, n))
	}
	sort.Strings(verbs)
	t.Logf("soak report: seed %d, %d operations in %v\n  by kind: %s\n  invariant checks passed: %d (after %d settled steps)\n"+
		"  agent requests: %d in all (%s), most by one agent in one step %d (%s, budget %d), quiet window %v: %d\n"+
		"  settle: longest %v (%s), VMs seen %d, VM creations %d; reservations compared with their launcher Pods %d",
		s.seed, len(s.log), took.Round(time.Second), strings.Join(kinds, " "), s.checks, s.steps,
		s.requests.total, strings.Join(verbs, " "), s.requests.most, s.requests.mostWhere, s.requests.mostBudget,
		soakQuiet, s.requests.quiet,
		s.longestSettle.Round(100*time.Millisecond), s.longestSettleOp, s.obs.vmsSeen(), s.obs.creations(), s.reservationsCompared)
}

// envPositive reads a positive integer from the environment, def when unset.
func envPositive(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number of operations", name, v)
	}
	return n, nil
}

// pick draws an operation that can run now, by weight; quick leaves out
// the slow kinds.
func (s *soak) pick(kinds []soakOp, quick bool) soakOp {
	ok := func(op soakOp) bool { return op.can(s) && (!quick || !op.slow) }
	total := 0
	for _, op := range kinds {
		if ok(op) {
			total += op.weight
		}
	}
	n := s.rng.IntN(total)
	for _, op := range kinds {
		if !ok(op) {
			continue
		}
		if n < op.weight {
			return op
		}
		n -= op.weight
	}
	panic("unreachable")
}

// newRand is the soak's generator: PCG seeded from seed, so a seed replays.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
