//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// diagnose says, for a step that did not settle, what the soak's informers
// cannot: the agent Pods and workloads by a fresh read, the namespace's
// warnings, which components still run, and the last lines of the
// controllers', the scheduler's and the doubles' logs. Whether the cluster or
// only the soak's view is stuck is then on the page.
func (s *soak) diagnose() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "--- diagnosis\nthe soak's informer shows these agent Pods:\n")
	for _, p := range s.obs.agentPods() {
		fmt.Fprintf(&b, "  %s uid %s node %q phase %s deleting %v\n", p.Name, p.UID, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	for _, args := range [][]string{
		{"get", "pods", "-n", s.ns, "-l", agentSelector, "-o", "custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName,PHASE:.status.phase,DELETING:.metadata.deletionTimestamp"},
		{"get", "deployments,statefulsets,daemonsets", "-n", s.ns, "-o", "wide"},
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
	fmt.Fprintf(&b, "doubles log (last lines):\n%s", testcluster.Tail(filepath.Join(e.cluster.Dir, "doubles.log"), 30))
	return b.String()
}
