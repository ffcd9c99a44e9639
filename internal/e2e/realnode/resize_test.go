//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// TestKubeletGivesTheReservationBack: a scaffolded agent Pod asks for its
// VM's room on top of its own, and the real kubelet actuates the agent's
// resize of it: the Pod's status reports the agent's own requests as
// allocated and in effect, the container's cgroup holds its own memory
// limit, and the VM's launcher Pod runs beside it on the node.
func TestKubeletGivesTheReservationBack(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm")
	pod := readyAgentPod(t, ns)

	template, err := e.kube.AppsV1().Deployments(ns).Get(t.Context(), scaffold.DefaultName("testvm"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reserved := template.Spec.Template.Spec.Containers[0].Resources.Requests
	own, ownLimits := podtemplate.OwnRequests(), podtemplate.OwnLimits()
	if reserved.Memory().Cmp(*own.Memory()) <= 0 {
		t.Fatalf("the Deployment's agent asks for %s, no more than its own %s: scaffold reserved nothing", contract.FormatResources(reserved), contract.FormatResources(own))
	}

	var status corev1.ContainerStatus
	eventually(t, time.Minute, "the kubelet to report the agent's own requests", func(ctx context.Context) (bool, string, error) {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		status = p.Status.ContainerStatuses[0]
		var pending []string
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
				pending = append(pending, fmt.Sprintf("%s %s: %s", c.Type, c.Reason, c.Message))
			}
		}
		if status.Resources == nil {
			return false, "no resources in the container's status", nil
		}
		done := len(pending) == 0 && sameCPUMemory(status.AllocatedResources, own) && sameCPUMemory(status.Resources.Requests, own) &&
			sameCPUMemory(status.Resources.Limits, ownLimits)
		return done, fmt.Sprintf("allocated %s, requests %s, limits %s, %v", contract.FormatResources(status.AllocatedResources),
			contract.FormatResources(status.Resources.Requests), contract.FormatResources(status.Resources.Limits), pending), nil
	})
	t.Logf("agent Pod %s: template asks for %s; the kubelet allocated %s", pod.Name, contract.FormatResources(reserved), contract.FormatResources(status.AllocatedResources))

	memMax := cgroupMemoryMax(t, pod.UID, status.ContainerID)
	if want := ownLimits.Memory().Value(); memMax != want {
		t.Errorf("the agent container's cgroup memory.max is %d, want its own limit %d", memMax, want)
	}
	t.Logf("agent container's cgroup memory.max: %d bytes", memMax)
	launcherRunsOnTheRealNode(t, ns, pairedVM(t, ns, pod))
}

// sameCPUMemory reports whether a and b ask for the same CPU and memory.
func sameCPUMemory(a, b corev1.ResourceList) bool {
	return a.Cpu().Cmp(*b.Cpu()) == 0 && a.Memory().Cmp(*b.Memory()) == 0
}

// cgroupMemoryMax reads the memory limit of the container containerID
// ("containerd://ID") of the Pod uid, under the real node's cgroup root:
// memory.max on cgroup v2, memory.limit_in_bytes in cgroup v1's memory
// hierarchy.
func cgroupMemoryMax(t *testing.T, uid types.UID, containerID string) int64 {
	t.Helper()
	id := containerID[strings.Index(containerID, "://")+3:]
	var matches []string
	for _, layout := range []struct{ root, file string }{
		{"/sys/fs/cgroup", "memory.max"},
		{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"},
	} {
		for _, qos := range []string{"*", ""} { // burstable or besteffort, or guaranteed
			m, _ := filepath.Glob(filepath.Join(layout.root, node.CgroupRoot, "kubepods*", qos, "pod"+string(uid), id, layout.file))
			matches = append(matches, m...)
		}
	}
	if len(matches) != 1 {
		t.Fatalf("the agent container's cgroup memory limit: found %q, want one file", matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", matches[0], err)
	}
	t.Logf("%s: %d", matches[0], n)
	return n
}
