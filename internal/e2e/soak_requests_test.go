//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// The agents' request budget, counted from the API server's audit log (it
// names the Pod whose token asked), every request of every agent: VMs,
// prototypes, Events, Pods.
const (
	// soakStepBase is what one agent may ask in one step, however short.
	// An agent's start costs 4 (GET prototype, POST VM, the watch, an
	// Event); replacing a VM left by an earlier Pod of its name about 10;
	// a create refused for the 15 s after an API server restart (see
	// docs/operations.md) or by a hand-made VM in the way is retried with backoff
	// (200 ms doubling, each retry a GET of the prototype and a POST, an
	// Event at the first), about 15 more.
	soakStepBase = 30
	// soakStepPer adds one request per this much of a step's length: the
	// backoff's cap (10 s) lets a retrying agent make about 0.3 a second
	// once it is reached. Issue 15's hot loop made 10 a second (a GET and
	// a watch, five times a second), which this catches in any step longer
	// than 4 s, and the quiet window at the end in any case.
	soakStepPer = 2 * time.Second
	// soakQuiet is the quiet window after the last step, and
	// soakQuietBudget what one agent may ask in it: nothing but renewing
	// its watches (client-go's reflector ends a watch after 5 to 10
	// minutes; a DaemonSet agent that stops its VM on evacuation watches
	// its VMI too), so 2.
	soakQuiet       = 20 * time.Second
	soakQuietBudget = 2
	// soakLull is how long no agent may have asked anything before the
	// quiet window opens: the last steps' recoveries must be over (after
	// an etcd restart the API server ends the watches only once its watch
	// cache has listed again, which can be after the step settled).
	soakLull = 10 * time.Second
)

// soakRequests reads the audit log as it grows and counts the soak
// namespace's agents' requests.
type soakRequests struct {
	path   string
	ns     string
	offset int64
	seen   map[string]bool // audit IDs: a watch is logged when it starts and again when it ends

	total, quiet int
	byVerb       map[string]int
	most         int
	mostWhere    string
	mostBudget   int
}

// start counts from the end of the log as it is now.
func (r *soakRequests) start(t *testing.T, ns string) {
	r.path, r.ns = e.cluster.AuditLog(), ns
	r.seen, r.byVerb = map[string]bool{}, map[string]int{}
	fi, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	r.offset = fi.Size()
}

// read returns the agents' requests logged since the last read, by Pod.
func (r *soakRequests) read() (map[string][]string, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	// Only whole lines: the API server may be writing the last one.
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	r.offset += int64(len(b))
	byPod := map[string][]string{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev testcluster.AuditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("read the audit log: %w", err)
		}
		if r.seen[ev.AuditID] {
			continue
		}
		r.seen[ev.AuditID] = true
		pod := ev.Pod()
		if pod == "" || !strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+r.ns+":") {
			continue
		}
		req := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			req += "/" + ev.ObjectRef.Subresource
		}
		byPod[pod] = append(byPod[pod], req+" "+ev.ObjectRef.Name)
		r.byVerb[ev.Verb+" "+ev.ObjectRef.Resource]++
		r.total++
	}
	return byPod, nil
}

// step counts the requests of a step that took took and fails t for
// every agent over budget.
func (r *soakRequests) step(t *testing.T, op string, took time.Duration) {
	t.Helper()
	byPod, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	budget := soakStepBase + int(took/soakStepPer)
	for _, pod := range sortedKeys(byPod) {
		reqs := byPod[pod]
		if len(reqs) > r.most {
			r.most, r.mostWhere, r.mostBudget = len(reqs), op+" "+pod, budget
		}
		if len(reqs) > budget {
			t.Errorf("after %s (%v): agent %s made %d requests, budget %d: %s", op, took.Round(100*time.Millisecond), pod, len(reqs), budget, summarize(reqs))
		}
	}
}

// quietWindow waits for a lull of soakLull in the agents' requests and
// checks every invariant once more, then waits soakQuiet with nothing
// happening and checks that no agent asked more than soakQuietBudget
// meanwhile.
func (s *soak) quietWindow() {
	t := s.t
	began := time.Now()
	if err := s.requests.waitLull(s.ctx, soakLull, soakSettleMax); err != nil {
		s.fatalf("before the quiet window: %v", err)
	}
	t.Logf("soak: the agents paused %v, %v after the last step", soakLull, time.Since(began).Round(100*time.Millisecond))
	s.checkStep("the wait for a lull", began)
	time.Sleep(soakQuiet) // the window itself: nothing to wait for
	byPod, err := s.requests.read()
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range sortedKeys(byPod) {
		s.requests.quiet += len(byPod[pod])
		if n := len(byPod[pod]); n > soakQuietBudget {
			t.Errorf("agent %s made %d requests in a quiet %v, budget %d: %s", pod, n, soakQuiet, soakQuietBudget, summarize(byPod[pod]))
		}
	}
}

// waitLull reads the log every second until no agent has asked anything
// for lull, and fails after limit. A file has no watch: the audit log is
// read as it grows.
func (r *soakRequests) waitLull(ctx context.Context, lull, limit time.Duration) error {
	start := time.Now()
	last, lastAsked := start, "nothing"
	for {
		byPod, err := r.read()
		if err != nil {
			return err
		}
		for _, pod := range sortedKeys(byPod) {
			last, lastAsked = time.Now(), pod+": "+summarize(byPod[pod])
		}
		switch {
		case time.Since(last) >= lull:
			return nil
		case time.Since(start) > limit:
			return fmt.Errorf("the agents never paused %v in %v; last asked: %s", lull, limit, lastAsked)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// summarize counts requests by kind, most first.
func summarize(reqs []string) string {
	n := map[string]int{}
	for _, r := range reqs {
		n[r]++
	}
	keys := sortedKeys(n)
	sort.SliceStable(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}
