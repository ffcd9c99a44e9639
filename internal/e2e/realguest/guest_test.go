//go:build e2e

package realguest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// createPrototype creates testdata/guest.yaml's prototype in ns: its VMs
// boot the harness's guest (package guest), ready when it answers HTTP.
func createPrototype(t *testing.T, ns string) {
	t.Helper()
	mustKubectl(t, nil, "apply", "-n", ns, "-f", repoFile("testdata/guest.yaml"))
}

// repoFile is the path of a file in the repository.
func repoFile(rel string) string {
	root, err := testcluster.RepoRoot()
	if err != nil {
		panic(err) // the tests run in the checkout, where RepoRoot finds it
	}
	return filepath.Join(root, rel)
}

// guestBoot bounds a guest's way from its agent Pod's creation to its
// readiness under TCG, on 2 cores shared with the whole cluster.
const guestBoot = 5 * time.Minute

// TestGuestsBootBehindAService runs a scaffolded Deployment of 2 whose VMs
// boot the real guest, reaches each guest through a Service, scales to 1 and
// checks that the guest it lost powered off on its ACPI shutdown and left
// nothing on the node, then drains the node.
func TestGuestsBootBehindAService(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns)
	manifests, stderr, code := runCode(t, nil, e.binary, "scaffold", "deployment", "guest", "-n", ns, "--image", e.image, "--replicas", "2", "--pdb", "1")
	if code != 0 {
		t.Fatalf("kubectl vmctl scaffold: exit %d: %s", code, stderr)
	}
	start := time.Now()
	mustKubectl(t, []byte(manifests), "apply", "-f", "-")
	pods := readyAgents(t, ns, 2)
	t.Logf("2 agent Pods Ready %s after kubectl apply", time.Since(start).Round(100*time.Millisecond))

	vmis := map[string]*kubevirtv1.VirtualMachineInstance{}
	for _, p := range pods {
		vmi := bootedGuest(t, ns, p)
		vmis[vmi.Name] = vmi
	}

	t.Run("a Service reaches each guest", func(t *testing.T) { serviceReachesGuests(t, ns, vmis) })

	t.Run("scale to 1 powers one guest off", func(t *testing.T) { scaleDownPowersOff(t, ns, pods) })

	t.Run("scale back to 2 boots a guest", func(t *testing.T) {
		start := time.Now()
		mustKubectl(t, nil, "scale", "-n", ns, "deployment/vmctl-guest", "--replicas=2")
		pods = readyAgents(t, ns, 2)
		t.Logf("scale 1 → 2: 2 agent Pods Ready %s after kubectl scale", time.Since(start).Round(100*time.Millisecond))
		for _, p := range pods {
			bootedGuest(t, ns, p)
		}
	})

	t.Run("drain", func(t *testing.T) { drainPowersOff(t, ns, pods) })
}

// drainPowersOff drains the real node under the scaffolded
// PodDisruptionBudget (minAvailable 1 of 2), the only node the agents may
// run on. The budget lets one agent Pod be evicted: its agent stops its VM,
// whose guest powers off, and its launcher Pod, whose eviction KubeVirt
// holds (evictionStrategy External), goes with the VM. The other stays, VM
// and guest Ready, for as long as its replacement has nowhere to run: the
// drain gives up, as it would on a cluster without room.
func drainPowersOff(t *testing.T, ns string, pods []corev1.Pod) {
	ctx := context.Background()
	consoles, _ := followConsoles(t, ns, pods)
	exits := watchAgentExits(t, ns)
	t.Cleanup(func() { kubectl(t, nil, "uncordon", e.node.Name) })
	start := time.Now()
	drained := make(chan string, 1)
	go func() {
		out, stderr, code := kubectl(t, nil, "drain", e.node.Name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
		drained <- fmt.Sprintf("exit %d after %s: %s%s", code, time.Since(start).Round(time.Second), out, stderr)
	}()
	var evicted, kept corev1.Pod
	eventually(t, drainTimeout, "one agent Pod to be evicted and go", func(ctx context.Context) (bool, string, error) {
		for i, p := range pods {
			gone, err := podGone(ctx, ns, p)
			if err != nil {
				return false, err.Error(), nil
			}
			if gone {
				evicted, kept = p, pods[1-i]
				return true, "", nil
			}
		}
		return false, "both still there", nil
	})
	t.Logf("kubectl drain: Pod %s and its VM gone %s after the drain began", evicted.Name, time.Since(start).Round(100*time.Millisecond))
	if !strings.Contains(consoles[evicted.Name].wait(10*time.Second), "powering off") {
		t.Errorf("the guest of evicted Pod %s did not power off", evicted.Name)
	}
	if code, ok := exits.of(evicted.Name); !ok || code != 0 {
		t.Errorf("the agent of evicted Pod %s exited %d (reported: %v), want 0", evicted.Name, code, ok)
	}
	result := <-drained
	if !strings.Contains(result, "disruption budget") {
		t.Errorf("kubectl drain: %s; want it stopped by the disruption budget", result)
	}
	cur, err := e.kube.CoreV1().Pods(ns).Get(ctx, kept.Name, metav1.GetOptions{})
	if err != nil || !podReady(cur) {
		t.Fatalf("Pod %s, which the budget keeps, is gone or not Ready: %v", kept.Name, err)
	}
	vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, derive.Name("guest", kept.Name, kept.UID), metav1.GetOptions{})
	if err != nil || vmi.Status.Phase != kubevirtv1.Running {
		t.Fatalf("the VMI of kept Pod %s: %v, want it Running", kept.Name, err)
	}
	if strings.Contains(consoles[kept.Name].wait(0), "powering off") {
		t.Errorf("the guest of Pod %s, which the budget keeps, powered off", kept.Name)
	}
}

// drainTimeout bounds the drain against a hang, not its time: one VM
// leaves in seconds (6 s measured on 2 cores), but a real guest's shutdown
// under TCG once took more than 40 s with the e2e package's tests beside
// it; the rest of it is the budget refusing the other, which kubectl
// retries every 5 s.
const drainTimeout = 2 * time.Minute

// readyAgents waits for n agent Pods of ns to be Ready and returns them.
func readyAgents(t *testing.T, ns string, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	eventually(t, guestBoot, fmt.Sprintf("%d agent Pods Ready", n), func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelComponent + "=" + contract.ComponentAgent})
		if err != nil {
			return false, "", err
		}
		ready = ready[:0]
		var seen []string
		for _, p := range list.Items {
			seen = append(seen, fmt.Sprintf("%s %s ready=%v", p.Name, p.Status.Phase, podReady(&p)))
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = append(ready, p)
			}
		}
		vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, v := range vmis.Items {
			seen = append(seen, fmt.Sprintf("VMI %s %s", v.Name, v.Status.Phase))
		}
		return len(ready) == n, strings.Join(seen, "; "), nil
	})
	return ready
}

// bootedGuest checks that the VMI of agent Pod p runs on the real node, that
// its guest booted (its console log says so) and that the Pod turned Ready
// no earlier than the VMI did on the guest's readiness probe.
func bootedGuest(t *testing.T, ns string, p corev1.Pod) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	name := derive.Name("guest", p.Name, p.UID)
	vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the VMI of Ready Pod %s: %v", p.Name, err)
	}
	if vmi.Status.NodeName != e.node.Name || vmi.Status.Phase != kubevirtv1.Running {
		t.Fatalf("VMI %s: %s on %q, want Running on %s", name, vmi.Status.Phase, vmi.Status.NodeName, e.node.Name)
	}
	var vmiReady *kubevirtv1.VirtualMachineInstanceCondition
	for i, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady && c.Status == corev1.ConditionTrue {
			vmiReady = &vmi.Status.Conditions[i]
		}
	}
	if vmiReady == nil {
		t.Fatalf("VMI %s is not Ready, yet Pod %s is", name, p.Name)
	}
	podAt := podCondition(&p, corev1.PodReady).LastTransitionTime
	if podAt.Before(&vmiReady.LastTransitionTime) {
		t.Errorf("Pod %s turned Ready at %s, before its VMI at %s", p.Name, podAt, vmiReady.LastTransitionTime)
	}
	launcher := launcherOf(t, vmi).Name
	console := mustKubectl(t, nil, "logs", "-n", ns, launcher, "-c", "guest-console-log")
	if want := "vmctl-guest: " + name + " up at 10.0.2.2/24"; !strings.Contains(console, want) {
		t.Fatalf("console of VMI %s (launcher %s) lacks %q:\n%s", name, launcher, want, console)
	}
	t.Logf("VMI %s Ready at %s, its Pod at %s; created %s", name, vmiReady.LastTransitionTime.Format(time.TimeOnly),
		podAt.Format(time.TimeOnly), vmi.CreationTimestamp.Format(time.TimeOnly))
	return vmi
}

// followConsoles follows the console of each agent Pod's guest, and returns
// the followers and the launcher Pods by agent Pod name.
func followConsoles(t *testing.T, ns string, pods []corev1.Pod) (map[string]*consoleFollower, map[string]corev1.Pod) {
	t.Helper()
	consoles, launchers := map[string]*consoleFollower{}, map[string]corev1.Pod{}
	for _, p := range pods {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(context.Background(), derive.Name("guest", p.Name, p.UID), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		launchers[p.Name] = launcherOf(t, vmi)
		consoles[p.Name] = followConsole(t, ns, launchers[p.Name].Name)
	}
	return consoles, launchers
}

// launcherOf is the launcher Pod of vmi.
func launcherOf(t *testing.T, vmi *kubevirtv1.VirtualMachineInstance) corev1.Pod {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(vmi.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmi.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("VMI %s has %d launcher Pods, want 1", vmi.Name, len(pods.Items))
	}
	return pods.Items[0]
}

// serviceReachesGuests creates a Service over the prototype's labels and
// GETs its ClusterIP from the node's client namespace until every guest
// answered with its hostname.
func serviceReachesGuests(t *testing.T, ns string, vmis map[string]*kubevirtv1.VirtualMachineInstance) {
	ctx := context.Background()
	svc, err := e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "guest"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "guest"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the Service's endpoints", func(ctx context.Context) (bool, string, error) {
		slices, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=guest"})
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					ready++
				}
			}
		}
		return ready == len(vmis), fmt.Sprintf("%d ready endpoints", ready), nil
	})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: e.node.DialFromClient, DisableKeepAlives: true}}
	url := "http://" + svc.Spec.ClusterIP + "/"
	answered := map[string]int{}
	start := time.Now()
	eventually(t, time.Minute, "every guest to answer through "+url, func(ctx context.Context) (bool, string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, err.Error(), nil
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		host := strings.TrimSpace(string(body))
		if _, ok := vmis[host]; !ok || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %q, want 200 and one of the guests' hostnames", url, resp.Status, host)
		}
		answered[host]++
		return len(answered) == len(vmis), fmt.Sprint(answered), nil
	})
	t.Logf("GET %s from %s: every guest answered within %s (%v)", url, "the client namespace", time.Since(start).Round(time.Millisecond), answered)
}

// scaleDownPowersOff scales the Deployment to 1 and checks that the VM of
// the Pod it removed got the ACPI shutdown: its console says the guest
// powered off, well inside the Pod's grace, the agent exited 0, and its
// qemu, mounts and cgroups are gone from the node.
func scaleDownPowersOff(t *testing.T, ns string, pods []corev1.Pod) {
	consoles, launchers := followConsoles(t, ns, pods)
	exits := watchAgentExits(t, ns)
	start := time.Now()
	mustKubectl(t, nil, "scale", "-n", ns, "deployment/vmctl-guest", "--replicas=1")
	var gone corev1.Pod
	eventually(t, time.Minute, "the Deployment to pick a Pod to remove", func(ctx context.Context) (bool, string, error) {
		for _, p := range pods {
			cur, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				// Not an answer about the Pod: ask again.
				return false, err.Error(), nil
			case cur.UID == p.UID && cur.DeletionTimestamp == nil:
				continue
			}
			gone = p
			return true, "", nil
		}
		return false, "both Pods still there", nil
	})
	grace := time.Duration(*gone.Spec.TerminationGracePeriodSeconds) * time.Second
	eventually(t, grace, "Pod "+gone.Name+" to go", func(ctx context.Context) (bool, string, error) {
		_, err := e.kube.CoreV1().Pods(ns).Get(ctx, gone.Name, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err), nil
	})
	took := time.Since(start)
	console := consoles[gone.Name].wait(10 * time.Second)
	if want := "powering off"; !strings.Contains(console, want) {
		t.Errorf("the console of Pod %s's guest never said %q:\n%s", gone.Name, want, console)
	}
	if took >= grace {
		t.Errorf("Pod %s took %s to go, its grace is %s", gone.Name, took, grace)
	}
	t.Logf("scale 2 → 1: Pod %s and its VM gone %s after kubectl scale (grace %s)", gone.Name, took.Round(100*time.Millisecond), grace)
	if code, ok := exits.of(gone.Name); !ok || code != 0 {
		t.Errorf("the agent of Pod %s exited %d (reported: %v), want 0", gone.Name, code, ok)
	}
	launcher := launchers[gone.Name]
	eventually(t, time.Minute, "launcher Pod "+launcher.Name+" to go", func(ctx context.Context) (bool, string, error) {
		_, err := e.kube.CoreV1().Pods(ns).Get(ctx, launcher.Name, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err), nil
	})
	nothingLeftOf(t, ns, derive.Name("guest", gone.Name, gone.UID), gone.UID, launcher.UID)
}

// agentExits records the last exit code the kubelet reported for each agent
// container of a namespace.
type agentExits struct {
	mu    sync.Mutex
	codes map[string]int32
}

func (a *agentExits) of(pod string) (int32, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.codes[pod]
	return c, ok
}

// watchAgentExits watches ns's agent Pods until t ends.
func watchAgentExits(t *testing.T, ns string) *agentExits {
	t.Helper()
	w, err := e.kube.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: contract.LabelComponent + "=" + contract.ComponentAgent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	a := &agentExits{codes: map[string]int32{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.Name == "agent" && c.State.Terminated != nil {
					a.mu.Lock()
					a.codes[p.Name] = c.State.Terminated.ExitCode
					a.mu.Unlock()
				}
			}
		}
	}()
	return a
}

// consoleFollower follows a launcher's guest-console-log container.
type consoleFollower struct {
	mu   sync.Mutex
	text strings.Builder
	done chan struct{}
}

func followConsole(t *testing.T, ns, launcher string) *consoleFollower {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", e.cluster.Kubeconfig, "logs", "-f", "-n", ns, launcher, "-c", "guest-console-log")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &consoleFollower{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.mu.Lock()
			f.text.WriteString(sc.Text() + "\n")
			f.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return f
}

// wait returns what the console said, once it ended or after d.
func (f *consoleFollower) wait(d time.Duration) string {
	select {
	case <-f.done:
	case <-time.After(d):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text.String()
}
