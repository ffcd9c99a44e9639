//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

// keepLogs copies the cluster's logs (every component's, the doubles', each
// agent's, but not the audit log) under dir, which it makes, and returns how
// many it copied: the cluster's directory goes when the tests end, and a
// failure that a replay does not bring back can only be read there.
func keepLogs(clusterDir, dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(clusterDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") || d.Name() == "audit.log" {
			return err
		}
		rel, err := filepath.Rel(clusterDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(to, data, 0o644)
	})
	return n, err
}

// keepLogs keeps every log, in its place, but the audit log and what is not
// a log (etcd's data, keys, kubeconfigs).
func TestKeepLogs(t *testing.T) {
	cluster := t.TempDir()
	files := map[string]string{
		"virt-controller.log":                     "panic: interface conversion",
		"audit.log":                               "every request",
		"admin.kubeconfig":                        "secret",
		"etcd/member/snap/db":                     "data",
		"kubelet/testsoak-x/vmctl-ss-0/agent.log": "Created VM",
	}
	for name, data := range files {
		path := filepath.Join(cluster, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kept := filepath.Join(t.TempDir(), "1-20261125")
	n, err := keepLogs(cluster, kept)
	if err != nil || n != 2 {
		t.Fatalf("keepLogs = %d, %v; want 2 files", n, err)
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(kept, name))
		want := strings.HasSuffix(name, ".log") && name != "audit.log"
		switch {
		case want && string(got) != data:
			t.Errorf("%s: kept %q (%v), want %q", name, got, err, data)
		case !want && err == nil:
			t.Errorf("%s kept, want it left behind", name)
		}
	}
}
