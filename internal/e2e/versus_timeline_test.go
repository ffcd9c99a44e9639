//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// printRamp prints when each kind of request on ns came during a ramp
// that started at t0, from the audit log's entries past mark: one line per
// requester, verb and resource ("(launcher)" for requests on launcher
// Pods), with the time of its first, 10th, 50th and 90th percentile and
// last request, and one more for each agent's first request. Kinds seen
// fewer than n/5 times are left out. It shows which step of a ramp the
// VMs wait on.
func printRamp(b testing.TB, name, ns string, mark, n int, t0 time.Time) {
	b.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		b.Fatal(err)
	}
	const agentsFirst = "agents' first request"
	steps := map[string][]time.Duration{}
	started := map[string]bool{}
	for _, ev := range events[mark:] {
		if ev.ObjectRef.Namespace != ns {
			continue
		}
		who, at := requester(ev, ns), ev.Received.Sub(t0)
		if who == "" {
			continue
		}
		step := who + " " + ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			step += "/" + ev.ObjectRef.Subresource
		}
		if ev.ObjectRef.Resource == "pods" && strings.HasPrefix(ev.ObjectRef.Name, "virt-launcher-") {
			step += " (launcher)"
		}
		steps[step] = append(steps[step], at)
		if pod := ev.Pod(); who == "agents" && !started[pod] {
			started[pod] = true
			steps[agentsFirst] = append(steps[agentsFirst], at)
		}
	}
	kinds := make([]string, 0, len(steps))
	for _, at := range steps {
		slices.Sort(at)
	}
	for k, at := range steps {
		if len(at) >= n/5 {
			kinds = append(kinds, k)
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return percentile(steps[kinds[i]], 0.5) < percentile(steps[kinds[j]], 0.5) })
	for _, k := range kinds {
		at := steps[k]
		fmt.Printf("versus: %s: ramp: %-55s %4d, at %s\n", name, k, len(at), strings.Join([]string{
			"first " + percentile(at, 0).String(), "p10 " + percentile(at, 0.1).String(), "p50 " + percentile(at, 0.5).String(),
			"p90 " + percentile(at, 0.9).String(), "last " + percentile(at, 1).String()}, ", "))
	}
}

// percentile is the q-th quantile of at, sorted (0 the first, 1 the
// last), rounded to 100 ms.
func percentile(at []time.Duration, q float64) time.Duration {
	return at[int(q*float64(len(at)-1))].Round(100 * time.Millisecond)
}
