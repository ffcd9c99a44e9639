//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// clusterCPU is the CPU time every process of the cluster used in one
// phase of a versus case, by process: the control plane's, KubeVirt's, this
// test process (the kubelet double and the virt-handler stand-in), the
// agents still running, and the children this process reaped meanwhile
// (agents that exited, and kubectl).
type clusterCPU map[string]time.Duration

// Names of the rows clusterCPU adds to the processes' own.
const (
	cpuAgents = "agents (running)"
	cpuReaped = "exited agents and kubectl (reaped children)"
)

// cpuMark is where each process's CPU time stood at one moment; agents is
// what the agents running then had used, which their parent's reaped time
// counts again once they exit.
type cpuMark struct {
	procs          map[string]time.Duration
	reaped, agents time.Duration
}

// markCPU fails t where it cannot read a process: see components.usage.
func markCPU(t testing.TB, c components, agents time.Duration) cpuMark {
	t.Helper()
	cpu, _ := c.usage(t)
	reaped, err := reapedCPUTime(os.Getpid())
	if err != nil {
		t.Fatalf("cannot measure the CPU of this process's reaped children: %v", err)
	}
	return cpuMark{procs: cpu, reaped: reaped, agents: agents}
}

// cpuSince is what each of c's processes used since m, with agents, the
// CPU time of the agents running now that started after m, or 0.
func cpuSince(t testing.TB, c components, m cpuMark, agents time.Duration) clusterCPU {
	t.Helper()
	now := markCPU(t, c, 0)
	used := clusterCPU{}
	for name, t := range now.procs {
		used[name] = t - m.procs[name]
	}
	used[cpuAgents] = agents
	used[cpuReaped] = now.reaped - m.reaped - m.agents
	return used
}

func (u clusterCPU) total() time.Duration {
	var sum time.Duration
	for _, t := range u {
		sum += t
	}
	return sum
}

// perVM says the CPU seconds per VM, the largest first, as
// "total (name s, ...)".
func (u clusterCPU) perVM(n int) string {
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return u[names[i]] > u[names[j]] })
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, u[name].Seconds()/float64(n)))
	}
	return fmt.Sprintf("%.3f (%s)", u.total().Seconds()/float64(n), strings.Join(parts, ", "))
}

// cpuRows are the names of both phases' processes, the pool's and vmctl's,
// sorted.
func cpuRows(phases ...clusterCPU) []string {
	seen := map[string]bool{}
	for _, p := range phases {
		for name := range p {
			seen[name] = true
		}
	}
	return sortedKeys(seen)
}
