//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// BenchmarkReservation measures what holding the VM's room adds to an
// agent's start: the time from the agent's process start to its VM created
// (its log's Created line), and its API requests until its VM
// was ready, from the audit log. Deployments of 5 agents with --reserve=false
// and with the reservation alternate, 3 rounds each. Run it with `make
// bench`.
func BenchmarkReservation(b *testing.B) {
	const rounds, replicas = 3, 5
	started := map[bool][]time.Duration{}
	requests := map[bool][]int{}
	for range b.N {
		for range rounds {
			for _, reserve := range []bool{false, true} {
				ns := namespace(b)
				createPrototype(b, ns, "testvm.yaml")
				deploy(b, ns, scaffold.KindDeployment, "testvm", "--replicas", fmt.Sprint(replicas), fmt.Sprintf("--reserve=%v", reserve))
				pairs := waitPaired(b, ns, "testvm", replicas, settle)
				perPod := agentRequestsByPod(b, ns)
				for pod := range pairs {
					requests[reserve] = append(requests[reserve], requestTotal(perPod[pod]))
				}
				d, restarted := startToCreated(b, ns, agentProcesses(b, ns).started)
				if restarted > 0 {
					b.Fatalf("%d agents restarted: their start→created is not a first start's", restarted)
				}
				started[reserve] = append(started[reserve], d...)
			}
		}
	}
	for _, reserve := range []bool{false, true} {
		name := map[bool]string{false: "no-reserve", true: "reserve"}[reserve]
		report(b, name+"-start→created", started[reserve])
		b.ReportMetric(float64(slices.Max(requests[reserve])), name+"-max-requests/agent")
	}
	fmt.Printf("reservation: start→created p50 %s p95 %s without, p50 %s p95 %s with (n=%d each); "+
		"requests per agent to a ready VM %d-%d without, %d-%d with\n",
		pct(started[false], 50), pct(started[false], 95), pct(started[true], 50), pct(started[true], 95), len(started[true]),
		slices.Min(requests[false]), slices.Max(requests[false]), slices.Min(requests[true]), slices.Max(requests[true]))
}
