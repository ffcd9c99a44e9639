//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// diagnose says, for a step that did not settle, what the soak's informers
// cannot: the agent Pods, workloads, VMs and VMIs by a fresh read, the
// namespace's warnings, which components still run, the last lines of the
// controllers', the scheduler's and the doubles' logs, and what
// virt-controller last logged about the Pods that are not Ready. Whether the
// cluster or only the soak's view is stuck is then on the page; the cluster's
// directory, with the whole logs, is gone when the test ends.
func (s *soak) diagnose() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "--- diagnosis\nthe soak's informer shows these agent Pods:\n")
	var unready []string
	for _, p := range s.obs.agentPods() {
		ready := podReady(p)
		fmt.Fprintf(&b, "  %s uid %s node %q phase %s ready %v deleting %v\n", p.Name, p.UID, p.Spec.NodeName, p.Status.Phase, ready, p.DeletionTimestamp != nil)
		if !ready {
			unready = append(unready, p.Name)
		}
	}
	for _, args := range [][]string{
		{"get", "pods", "-n", s.ns, "-l", agentSelector, "-o", "custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName,PHASE:.status.phase,DELETING:.metadata.deletionTimestamp"},
		{"get", "deployments,statefulsets,daemonsets", "-n", s.ns, "-o", "wide"},
		{"get", "virtualmachines", "-n", s.ns, "-o", "custom-columns=NAME:.metadata.name,UID:.metadata.uid,STATUS:.status.printableStatus,READY:.status.ready,DELETING:.metadata.deletionTimestamp,RUN:.spec.runStrategy"},
		{"get", "virtualmachineinstances", "-n", s.ns, "-o", "custom-columns=NAME:.metadata.name,UID:.metadata.uid,PHASE:.status.phase,NODE:.status.nodeName,EVACUATE:.status.evacuationNodeName,DELETING:.metadata.deletionTimestamp"},
		{"get", "events", "-n", s.ns, "--field-selector", "type=Warning", "--sort-by", ".lastTimestamp"},
	} {
		out, err := soakKubectl(ctx, args...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) > 30 {
			out = strings.Join(lines[len(lines)-30:], "\n")
		}
		fmt.Fprintf(&b, "kubectl %s (%v):\n%s\n", strings.Join(args[:2], " "), err, out)
	}
	fmt.Fprintf(&b, "components running: %d of 5 (pids %v)\n", len(e.cluster.Pids()), e.cluster.Pids())
	for _, name := range []string{testcluster.KubeControllerManager, testcluster.KubeScheduler} {
		fmt.Fprintf(&b, "%s log (last lines):\n%s\n", name, testcluster.Tail(e.cluster.LogFile(name), 20))
	}
	fmt.Fprintf(&b, "doubles log (last lines):\n%s\n", testcluster.Tail(filepath.Join(e.cluster.Dir, "doubles.log"), 30))
	for _, name := range []string{"virt-controller", "virt-api"} {
		fmt.Fprintf(&b, "%s log, last lines about %v:\n%s\n", name, unready, linesAbout(e.cluster.LogFile(name), unready, 25))
	}
	return b.String()
}

// linesAbout is the last n lines of the log at path that name one of names
// (a VM's name holds its Pod's), or its last n lines when names is empty.
func linesAbout(path string, names []string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if len(names) == 0 || slices.ContainsFunc(names, func(name string) bool { return strings.Contains(line, name) }) {
			kept = append(kept, line)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}
