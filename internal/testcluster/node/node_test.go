//go:build e2e

package node_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// machineState is what a node may change on the machine and must put back.
func machineState(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	cmd := func(name string, args ...string) string {
		b, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	// Interface indexes and counters change with any link; names are what count.
	links := regexp.MustCompile(`(?m)^\d+: ([^:@]+)`).FindAllStringSubmatch(cmd("ip", "-o", "link"), -1)
	var names []string
	for _, l := range links {
		names = append(names, l[1])
	}
	sort.Strings(names)
	out["links"] = strings.Join(names, " ")
	out["routes"] = cmd("ip", "route", "show", "table", "all")
	out["nftables"] = cmd("nft", "list", "ruleset")
	counters := regexp.MustCompile(`\[\d+:\d+\]|^#.*$`)
	for _, ipt := range []string{"iptables-save", "ip6tables-save"} {
		lines := strings.Split(cmd(ipt), "\n")
		for i, l := range lines {
			lines[i] = counters.ReplaceAllString(l, "")
		}
		out[ipt] = strings.Join(lines, "\n")
	}
	for _, k := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward"} {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			t.Fatal(err)
		}
		out["sysctl "+k] = strings.TrimSpace(string(b))
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	out["mounts"] = string(mounts)
	for _, d := range []string{"/sys/fs/cgroup/pids" + node.CgroupRoot, "/sys/fs/cgroup/memory" + node.CgroupRoot, "/run/containerd", "/var/lib/cni", "/var/run/netns", "/etc/cni", "/opt/cni", node.StateFile} {
		_, err := os.Stat(d)
		out["exists "+d] = strings.TrimSpace(strings.TrimPrefix(err2s(err), "stat "+d+": "))
	}
	return out
}

func err2s(err error) string {
	if err == nil {
		return "yes"
	}
	return err.Error()
}

func TestRealNodeRunsAPodAndLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "a real node needs root")
	}
	before := machineState(t)
	ctx := t.Context()
	bins, err := testcluster.EnsureBinaries(ctx, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Binaries: bins, BindAddress: "0.0.0.0", Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	n, err := node.Start(ctx, c, node.Options{
		Log:               os.Stderr,
		Labels:            map[string]string{"vmctl.test/real": "true"},
		ExtendedResources: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("110")},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = n.Stop()
		}
	}()
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nd.Labels["vmctl.test/real"] != "true" || nd.Annotations[testcluster.NodeAnnotation] != "" {
		t.Errorf("node labels %v annotations %v: want vmctl.test/real=true and no kwok annotation", nd.Labels, nd.Annotations)
	}
	var internal string
	for _, a := range nd.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal != node.Address {
		t.Errorf("node InternalIP %q, want %s", internal, node.Address)
	}
	if q := nd.Status.Capacity["devices.kubevirt.io/kvm"]; q.Value() != 110 {
		t.Errorf("capacity devices.kubevirt.io/kvm = %s, want 110", q.String())
	}

	running := runPause(t, cs, n)
	ip, err := netip.ParseAddr(running.Status.PodIP)
	if err != nil || !netip.MustParsePrefix(node.Subnet).Contains(ip) {
		t.Errorf("pod IP %q, want one in %s", running.Status.PodIP, node.Subnet)
	}
	// kubectl logs goes API server -> kubelet at the node's address.
	logs := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig, "logs", "pause")
	var stderr bytes.Buffer
	logs.Stderr = &stderr
	if _, err := logs.Output(); err != nil {
		t.Errorf("kubectl logs: %v: %s", err, stderr.String())
	}

	if err := n.Stop(); err != nil {
		t.Fatalf("stop the node: %v", err)
	}
	stopped = true
	compare(t, before, machineState(t))
}

// runPause runs a Pod of the node's pause image on n and waits for it to run.
func runPause(t *testing.T, cs kubernetes.Interface, n *node.Node) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      n.Name,
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			Containers:                    []corev1.Container{{Name: "pause", Image: node.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "pause", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod not Running: %v; status %+v\nkubelet log tail:\n%s", err, running.Status, testcluster.Tail(n.LogFile(node.Kubelet), 30))
	}
	return running
}
