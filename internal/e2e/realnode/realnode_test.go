//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// pairedVM checks that pod's derived VM exists, belongs to pod, is pinned to
// the real node and is Ready, and that the Pod turned Ready no earlier than
// its VM did.
func pairedVM(t *testing.T, ns string, pod *corev1.Pod) *kubevirtv1.VirtualMachine {
	t.Helper()
	if pod.Spec.NodeName != e.node.Name {
		t.Fatalf("pod %s runs on %s, want the real node %s", pod.Name, pod.Spec.NodeName, e.node.Name)
	}
	vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(context.Background(), derive.Name("testvm", pod.Name, pod.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the VM of Ready pod %s: %v", pod.Name, err)
	}
	if vm.Annotations[contract.AnnotationPodUID] != string(pod.UID) || testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) != e.node.Name || !vm.Status.Ready {
		t.Fatalf("VM %s: pod-uid %s (pod %s), pinned to %q, ready %v; want the pod's, the real node, ready",
			vm.Name, vm.Annotations[contract.AnnotationPodUID], pod.UID, testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity), vm.Status.Ready)
	}
	for _, c := range vm.Status.Conditions {
		if c.Type != kubevirtv1.VirtualMachineReady {
			continue
		}
		podAt := readyCondition(pod).LastTransitionTime
		if podAt.Before(&c.LastTransitionTime) {
			t.Errorf("pod %s turned Ready at %s, before its VM did at %s", pod.Name, podAt, c.LastTransitionTime)
		}
		t.Logf("pod %s Ready at %s, its VM at %s (whole seconds)", pod.Name, podAt.Format(time.TimeOnly), c.LastTransitionTime.Format(time.TimeOnly))
	}
	if got := pod.Spec.Containers[0].Image; got != e.image {
		t.Errorf("pod runs image %s, want %s", got, e.image)
	}
	launcherRunsOnTheRealNode(t, ns, vm)
	return vm
}

// launcherPod returns the launcher Pod that KubeVirt's virt-controller made
// for vm's VMI, or nil once there is none.
func launcherPod(t *testing.T, ns string, vmi *kubevirtv1.VirtualMachineInstance) *corev1.Pod {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmi.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 1 {
		t.Fatalf("VMI %s has %d launcher Pods, want one", vmi.Name, len(pods.Items))
	}
	if len(pods.Items) == 0 {
		return nil
	}
	return &pods.Items[0]
}

// launcherRunsOnTheRealNode checks that the real kubelet runs the launcher
// Pod of vm's VMI, as KubeVirt's virt-controller made it, from the stand-in
// images: every container Ready, every init container done with exit 0 but
// the guest-console-log sidecar, which runs.
func launcherRunsOnTheRealNode(t *testing.T, ns string, vm *kubevirtv1.VirtualMachine) {
	t.Helper()
	vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(context.Background(), vm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the VMI of ready VM %s: %v", vm.Name, err)
	}
	launcher := launcherPod(t, ns, vmi)
	switch {
	case launcher == nil:
		t.Fatalf("VMI %s has no launcher Pod", vmi.Name)
	case vmi.Status.NodeName != e.node.Name || launcher.Spec.NodeName != e.node.Name:
		t.Fatalf("VMI %s on node %q, its launcher Pod %s on %q; want both on the real node %s", vmi.Name, vmi.Status.NodeName, launcher.Name, launcher.Spec.NodeName, e.node.Name)
	case !podReady(launcher) || launcher.Status.Phase != corev1.PodRunning:
		t.Fatalf("launcher Pod %s: phase %s ready %v, want Running and Ready", launcher.Name, launcher.Status.Phase, podReady(launcher))
	}
	if got := launcher.Spec.Containers[0].Image; got != node.LauncherImage {
		t.Errorf("launcher Pod %s runs %s, want virt-controller's --launcher-image %s", launcher.Name, got, node.LauncherImage)
	}
	for _, c := range launcher.Status.ContainerStatuses {
		if !c.Ready || c.State.Running == nil {
			t.Errorf("launcher Pod %s: container %s ready %v state %+v, want running and ready", launcher.Name, c.Name, c.Ready, c.State)
		}
	}
	for _, c := range launcher.Status.InitContainerStatuses {
		if c.Name == "guest-console-log" {
			if c.State.Running == nil {
				t.Errorf("launcher Pod %s: sidecar %s state %+v, want running", launcher.Name, c.Name, c.State)
			}
		} else if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			t.Errorf("launcher Pod %s: init container %s state %+v, want terminated with exit code 0", launcher.Name, c.Name, c.State)
		}
	}
}

func TestScaffoldedWorkloadsRunOnTheRealNode(t *testing.T) {
	for _, kind := range []scaffold.Kind{scaffold.KindDeployment, scaffold.KindDaemonSet, scaffold.KindStatefulSet} {
		t.Run(string(kind), func(t *testing.T) {
			ns := namespace(t)
			createPrototype(t, ns, "testvm.yaml")
			start := time.Now()
			deploy(t, ns, kind, "testvm")
			pod := readyAgentPod(t, ns)
			t.Logf("agent Pod %s Ready %s after kubectl apply", pod.Name, time.Since(start).Round(time.Millisecond))
			pairedVM(t, ns, pod)
			if n := pod.Status.ContainerStatuses[0].RestartCount; n != 0 {
				t.Errorf("restartCount %d, want 0", n)
			}
		})
	}
}

// TestPodWithoutItsVMIsNotReady: the agent refuses a prototype whose
// writable PVC every VM would share, so no VM comes, and the kubelet's
// readiness probe keeps the running Pod unready.
func TestPodWithoutItsVMIsNotReady(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "shared-pvc-vm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "pvcvm")
	var pod *corev1.Pod
	eventually(t, settle, "the agent running and its readiness probe failing", func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(list.Items)), err
		}
		pod = &list.Items[0]
		evs, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod.Name).String()})
		if err != nil {
			return false, "", err
		}
		// The probe's Event can come before the kubelet reports the Pod
		// Running: wait for both.
		for _, ev := range evs.Items {
			if ev.Reason == "Unhealthy" && ev.Source.Component == "kubelet" && strings.Contains(ev.Message, "Readiness probe failed") {
				return pod.Status.Phase == corev1.PodRunning, fmt.Sprintf("pod %s phase %s, its readiness probe failed", pod.Name, pod.Status.Phase), nil
			}
		}
		return false, fmt.Sprintf("pod %s phase %s, no failed readiness probe yet", pod.Name, pod.Status.Phase), nil
	})
	pod, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || podReady(pod) {
		t.Errorf("pod %s: phase %s ready %v, want Running and not Ready", pod.Name, pod.Status.Phase, podReady(pod))
	}
	vms, err := e.virt.KubevirtV1().VirtualMachines(ns).List(context.Background(), metav1.ListOptions{LabelSelector: derive.DerivedSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(vms.Items) != 0 {
		t.Errorf("%d derived VMs, want none", len(vms.Items))
	}
}

// TestAgentPodOnTheRealNode follows one scaffolded Deployment's Pod through
// what only a real kubelet and runtime show: its log, its security context as
// the kernel applies it, exec, a restart after its process is killed, and
// deletion.
func TestAgentPodOnTheRealNode(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm")
	pod := readyAgentPod(t, ns)
	vm := pairedVM(t, ns, pod)
	ctx := context.Background()

	t.Run("kubectl logs shows the agent's log", func(t *testing.T) {
		out, stderr, code := kubectl(t, nil, "logs", "-n", ns, pod.Name)
		want := fmt.Sprintf(`vm=%q`, ns+"/"+vm.Name)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("kubectl logs: exit %d, stderr %q; want a log naming %s, got:\n%s", code, stderr, want, out)
		}
	})

	pid, err := e.node.ContainerPID(ctx, pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the kernel runs it as scaffold's securityContext says", func(t *testing.T) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"Uid":        "65532\t65532\t65532\t65532", // runAsUser
			"CapEff":     "0000000000000000",           // capabilities drop ALL
			"CapBnd":     "0000000000000000",
			"NoNewPrivs": "1", // allowPrivilegeEscalation false
			"Seccomp":    "2", // RuntimeDefault: a filter
		}
		for _, line := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if w, ok := want[k]; ok {
				if strings.TrimSpace(v) != w {
					t.Errorf("/proc/%d/status %s: %q, want %q", pid, k, strings.TrimSpace(v), w)
				}
				delete(want, k)
			}
		}
		if len(want) > 0 {
			t.Errorf("/proc/%d/status lacks %v", pid, want)
		}
		mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(mounts), "\n") {
			f := strings.Fields(line)
			if len(f) > 5 && f[4] == "/" {
				if opts := strings.Split(f[5], ","); opts[0] != "ro" {
					t.Errorf("the container's root is mounted %s, want ro (readOnlyRootFilesystem)", f[5])
				}
				return
			}
		}
		t.Errorf("no root mount in /proc/%d/mountinfo", pid)
	})

	t.Run("kubectl exec runs in the container", func(t *testing.T) {
		// The image holds the agent and nothing else: no shell, so exec runs
		// the agent itself.
		out, stderr, code := kubectl(t, nil, "exec", "-n", ns, pod.Name, "--", "/vmctl-agent", "--help")
		if code != 0 || !strings.Contains(out, "kubectl vmctl agent") {
			t.Errorf("kubectl exec /vmctl-agent --help: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
		}
		_, stderr, code = kubectl(t, nil, "exec", "-n", ns, pod.Name, "--", "/bin/sh", "-c", "true")
		if code == 0 || !strings.Contains(stderr, "no such file") {
			t.Errorf("kubectl exec /bin/sh: exit %d, stderr %q; want no shell in the image", code, stderr)
		}
	})

	t.Run("a container the kubelet restarts adopts its VM", func(t *testing.T) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the agent (pid %d): %v", pid, err)
		}
		var restarted *corev1.Pod
		eventually(t, settle, "the kubelet to restart the agent and the Pod to be Ready again", func(ctx context.Context) (bool, string, error) {
			p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			cs := p.Status.ContainerStatuses[0]
			restarted = p
			return cs.RestartCount == 1 && podReady(p), fmt.Sprintf("restarts %d ready %v", cs.RestartCount, podReady(p)), nil
		})
		if term := restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated; term == nil || term.ExitCode != 137 {
			t.Errorf("last termination %+v, want exit code 137 (SIGKILL)", term)
		}
		after := pairedVM(t, ns, restarted)
		if after.UID != vm.UID {
			t.Errorf("VM %s replaced after the restart: uid %s -> %s, want it adopted", vm.Name, vm.UID, after.UID)
		}
		pod = restarted
	})

	t.Run("kubectl delete pod deletes the VM and exits 0 within the grace period", func(t *testing.T) {
		grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
		w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
			ResourceVersion: pod.ResourceVersion,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// The agent deletes its VM in the foreground: the VM goes after its
		// VMI, which KubeVirt lets go once its launcher Pod is gone, which
		// the real kubelet stops. Their watches time each step.
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		launcher := launcherPod(t, ns, vmi)
		if launcher == nil {
			t.Fatalf("VMI %s has no launcher Pod", vmi.Name)
		}
		byName := func(name, rv string) metav1.ListOptions {
			return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv}
		}
		steps := []struct {
			what  string
			watch func() (watch.Interface, error)
			at    <-chan time.Time
		}{
			{what: "launcher Pod " + launcher.Name, watch: func() (watch.Interface, error) {
				return e.kube.CoreV1().Pods(ns).Watch(ctx, byName(launcher.Name, launcher.ResourceVersion))
			}},
			{what: "VMI " + vmi.Name, watch: func() (watch.Interface, error) {
				return e.virt.KubevirtV1().VirtualMachineInstances(ns).Watch(ctx, byName(vmi.Name, vmi.ResourceVersion))
			}},
			{what: "VM " + vm.Name, watch: func() (watch.Interface, error) {
				return e.virt.KubevirtV1().VirtualMachines(ns).Watch(ctx, byName(vm.Name, ""))
			}},
		}
		for i := range steps {
			sw, err := steps[i].watch()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sw.Stop)
			steps[i].at = deletedAt(sw)
		}
		start := time.Now()
		if _, stderr, code := kubectl(t, nil, "delete", "pod", "-n", ns, pod.Name, "--wait=false"); code != 0 {
			t.Fatalf("kubectl delete pod: exit %d: %s", code, stderr)
		}
		var last *corev1.Pod
		timeout := time.After(grace + 10*time.Second)
	events:
		for {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok {
					last = p
				}
				if ev.Type == watch.Deleted {
					break events
				}
			case <-timeout:
				t.Fatalf("pod %s still there %s after kubectl delete", pod.Name, time.Since(start))
			}
		}
		took := time.Since(start)
		t.Logf("pod %s gone %s after kubectl delete (grace period %s)", pod.Name, took.Round(time.Millisecond), grace)
		if took > grace {
			t.Errorf("pod took %s to go, longer than its grace period %s", took, grace)
		}
		term := last.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 0 {
			t.Errorf("the agent's last state %+v, want terminated with exit code 0", last.Status.ContainerStatuses[0].State)
		}
		_, err = e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("VM %s after its pod went: %v, want it deleted", vm.Name, err)
		}
		if _, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vmi.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("VMI %s after its VM went: %v, want it deleted", vmi.Name, err)
		}
		if _, err := e.kube.CoreV1().Pods(ns).Get(ctx, launcher.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("launcher Pod %s after its VMI went: %v, want it deleted", launcher.Name, err)
		}
		for _, s := range steps {
			select {
			case at := <-s.at:
				t.Logf("%s gone %s after kubectl delete", s.what, at.Sub(start).Round(time.Millisecond))
			case <-time.After(5 * time.Second):
				t.Logf("%s: no deletion seen on its watch", s.what)
			}
		}
	})
}

// deletedAt sends when w delivers a Deleted event.
func deletedAt(w watch.Interface) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				at <- time.Now()
				return
			}
		}
	}()
	return at
}
