//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// namespace creates a namespace for t and deletes it, and the admission
// policies scaffold made for it, when t ends.
func namespace(t testing.TB) string {
	t.Helper()
	ns := testcluster.Namespace(t, e.kube, func(ns string) { dumpAgentLogs(t, ns) })
	t.Cleanup(func() { deleteScaffolded(ns) })
	return ns
}

// dumpAgentLogs logs the tail of every agent's log in ns, for failed tests.
func dumpAgentLogs(t testing.TB, ns string) {
	pods, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		path := e.kubelet.LogPath(ns, p.Name)
		if _, err := os.Stat(path); err != nil {
			continue // never started
		}
		t.Logf("agent log of %s/%s:\n%s", ns, p.Name, testcluster.Tail(path, 20))
	}
}

// repoFile is the path of a file in the repository.
func repoFile(rel string) string {
	root, err := testcluster.RepoRoot()
	if err != nil {
		panic(err) // the tests run in the checkout, where RepoRoot finds it
	}
	return filepath.Join(root, rel)
}

// createPrototype creates the prototype VM of testdata/<file> in ns.
func createPrototype(t testing.TB, ns, file string) *kubevirtv1.VirtualMachine {
	t.Helper()
	return createPrototypeWith(t, ns, file, nil)
}

// readPrototype reads the prototype VM of testdata/<file>, changed by
// change (when not nil).
func readPrototype(t testing.TB, file string, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	b, err := os.ReadFile(repoFile(filepath.Join("testdata", file)))
	if err != nil {
		t.Fatal(err)
	}
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(b, &vm); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	if change != nil {
		change(&vm)
	}
	return &vm
}

// createPrototypeWith creates the prototype VM of testdata/<file> in ns,
// changed by change first (when not nil).
func createPrototypeWith(t testing.TB, ns, file string, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm := readPrototype(t, file, change)
	created, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create prototype %s: %v", vm.Name, err)
	}
	return created
}

// vmctl runs the kubectl-vmctl binary as the cluster admin and returns its
// stdout; a non-zero exit fails t unless wantCode says otherwise.
func vmctl(t testing.TB, args ...string) string {
	t.Helper()
	out, _, code := vmctlCode(t, args...)
	if code != 0 {
		t.Fatalf("kubectl vmctl %s: exit %d", strings.Join(args, " "), code)
	}
	return out
}

// vmctlCode runs kubectl-vmctl and returns stdout, stderr and the exit code.
func vmctlCode(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return runCode(t, nil, e.binary, args...)
}

// kubectl runs kubectl against the cluster with stdin and fails t on error.
func kubectl(t testing.TB, stdin []byte, args ...string) string {
	t.Helper()
	out, stderr, code := runCode(t, stdin, "kubectl", args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

func runCode(t testing.TB, stdin []byte, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run %s: %v", name, err)
		}
		code = exit.ExitCode()
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s stderr: %s", filepath.Base(name), strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

// deploy scaffolds a workload for prototype with kubectl vmctl scaffold and
// applies it with kubectl, as a user would.
func deploy(t testing.TB, ns string, kind scaffold.Kind, prototype string, flags ...string) {
	t.Helper()
	args := append([]string{"scaffold", strings.ToLower(string(kind)), prototype, "-n", ns,
		"--grace-period", "60"}, flags...)
	manifests := vmctl(t, args...)
	kubectl(t, []byte(manifests), "apply", "-f", "-")
}

// eventually polls cond every 100ms until it holds or timeout passes, then
// fails t with what it last saw.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		if err == nil || seen != "" {
			last = seen // a request cut short by the deadline saw nothing
		}
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v; last seen: %s", what, timeout, err, last)
	}
}

// throughout checks, every second for period and once at its end, that
// nothing went wrong: check says what did, or "". It is for what only
// time can tell, a timer that must not fire: the test starts it once the
// code reached the state that would start that timer, and a failure shows
// at once.
func throughout(t testing.TB, period time.Duration, what string, check func(ctx context.Context) (string, error)) {
	t.Helper()
	for end := time.Now().Add(period); ; {
		problem, err := check(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if problem != "" {
			t.Fatalf("%s: %s", what, problem)
		}
		left := time.Until(end)
		if left <= 0 {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(min(time.Second, left)):
		}
	}
}

// agentSelector selects the Pods scaffold labels as agents.
var agentSelector = contract.LabelName + "=" + contract.AppName + "," + contract.LabelComponent + "=" + contract.ComponentAgent

// agentPods lists the Running agent pods in ns by name.
func agentPods(ctx context.Context, ns string) (map[string]corev1.Pod, error) {
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: agentSelector,
	})
	if err != nil {
		return nil, err
	}
	pods := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			pods[p.Name] = p
		}
	}
	return pods, nil
}

// derivedVMs lists the VMs in ns that vmctl made, by name.
// shortVMName is derive.Name of prototype and pod where the two fit a name
// uncut, as every name these tests make does: only a cut name ends in the
// Pod's UID, which a test that knows only the Pod's name does not have.
func shortVMName(prototype, pod string) string {
	if len(prototype)+1+len(pod) > contract.MaxNameLength {
		panic(fmt.Sprintf("shortVMName(%q, %q): the name is cut, and ends in the Pod's UID: use derive.Name", prototype, pod))
	}
	return derive.Name(prototype, pod, "")
}

func derivedVMs(ctx context.Context, ns string) (map[string]kubevirtv1.VirtualMachine, error) {
	list, err := e.virt.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{LabelSelector: derive.DerivedSelector})
	if err != nil {
		return nil, err
	}
	vms := map[string]kubevirtv1.VirtualMachine{}
	for _, vm := range list.Items {
		vms[vm.Name] = vm
	}
	return vms, nil
}

// waitPaired waits until ns holds exactly want agent pods and, for each, exactly
// one derived VM of prototype that is pinned to the pod's node, belongs to the
// pod's UID and is ready, and no other derived VM. It returns the pairs.
func waitPaired(t testing.TB, ns, prototype string, want int, timeout time.Duration) map[string]kubevirtv1.VirtualMachine {
	t.Helper()
	return waitDerived(t, ns, prototype, want, timeout, true)
}

// waitDerived is waitPaired that, unless ready is set, does not wait for
// KubeVirt to run the VMs.
func waitDerived(t testing.TB, ns, prototype string, want int, timeout time.Duration, ready bool) map[string]kubevirtv1.VirtualMachine {
	t.Helper()
	var pairs map[string]kubevirtv1.VirtualMachine
	eventually(t, timeout, fmt.Sprintf("%d pods paired with VMs of %s (ready: %v)", want, prototype, ready), func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, "", err
		}
		seen := describe(pods, vms)
		if len(pods) != want || len(vms) != want {
			return false, seen, nil
		}
		pairs = map[string]kubevirtv1.VirtualMachine{}
		for name, pod := range pods {
			vm, ok := vms[derive.Name(prototype, name, pod.UID)]
			if !ok || vm.Annotations[contract.AnnotationPodUID] != string(pod.UID) || vm.DeletionTimestamp != nil ||
				testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) != pod.Spec.NodeName {
				return false, seen, nil
			}
			if ready && (vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning || !vm.Status.Ready) {
				return false, seen + "; " + kubevirtState(ctx, ns, vm.Name), nil
			}
			pairs[name] = vm
		}
		return true, seen, nil
	})
	return pairs
}

// waitWarningEvent waits until ns's one agent Pod has a Warning Event whose
// message matches, and returns the Pod.
func waitWarningEvent(t *testing.T, ns, what string, match func(msg string) bool) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, settle, what, func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		pod = pods[firstKey(pods)]
		return hasWarningEvent(ctx, ns, pod.Name, match)
	})
	return pod
}

// waitPodWarningEvent waits until Pod ns/pod has a Warning Event whose
// message matches.
func waitPodWarningEvent(t *testing.T, ns, pod, what string, match func(msg string) bool) {
	t.Helper()
	eventually(t, settle, what, func(ctx context.Context) (bool, string, error) {
		return hasWarningEvent(ctx, ns, pod, match)
	})
}

// hasWarningEvent reports whether Pod ns/pod has a Warning Event whose
// message matches, and else the reasons and messages it has.
func hasWarningEvent(ctx context.Context, ns, pod string, match func(msg string) bool) (bool, string, error) {
	events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "type": corev1.EventTypeWarning}.String(),
	})
	if err != nil {
		return false, "", err
	}
	var msgs []string
	for _, ev := range events.Items {
		msgs = append(msgs, ev.Reason+": "+ev.Message)
		if match(ev.Message) {
			return true, "", nil
		}
	}
	return false, strings.Join(msgs, " | "), nil
}

// kubevirtState describes what KubeVirt has made for VM ns/name: its VMI
// and launcher Pods, for a failure's message.
func kubevirtState(ctx context.Context, ns, name string) string {
	var s []string
	if vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		s = append(s, fmt.Sprintf("vmi %s: %v", name, err))
	} else {
		s = append(s, fmt.Sprintf("vmi %s phase=%s node=%s deleting=%v conditions=%v", name, vmi.Status.Phase, vmi.Status.NodeName, vmi.DeletionTimestamp != nil, vmi.Status.Conditions))
	}
	pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel})
	if err != nil {
		return strings.Join(append(s, err.Error()), "; ")
	}
	for _, p := range pods.Items {
		if p.Annotations[kubevirtv1.DomainAnnotation] == name {
			s = append(s, fmt.Sprintf("launcher %s phase=%s node=%s deleting=%v conditions=%v", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, p.Status.Conditions))
		}
	}
	return strings.Join(s, "; ")
}

func describe(pods map[string]corev1.Pod, vms map[string]kubevirtv1.VirtualMachine) string {
	var s []string
	for name, p := range pods {
		s = append(s, fmt.Sprintf("pod %s uid=%s node=%s", name, p.UID, p.Spec.NodeName))
	}
	for name, vm := range vms {
		s = append(s, fmt.Sprintf("vm %s pod-uid=%s node=%s status=%s ready=%v deleting=%v",
			name, vm.Annotations[contract.AnnotationPodUID], testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity), vm.Status.PrintableStatus, vm.Status.Ready, vm.DeletionTimestamp != nil))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

// deleteScaffolded deletes the cluster-scoped objects that scaffold made
// for workloads in ns ("<name>.<ns>"), which the namespace's deletion does
// not take: admission policies and their bindings, and launcher priority
// classes.
func deleteScaffolded(ns string) {
	ctx := context.Background()
	ar := e.kube.AdmissionregistrationV1()
	if list, err := ar.ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{}); err == nil {
		for _, b := range list.Items {
			if strings.HasSuffix(b.Name, "."+ns) {
				_ = ar.ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
			}
		}
	}
	if list, err := ar.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			if strings.HasSuffix(p.Name, "."+ns) {
				_ = ar.ValidatingAdmissionPolicies().Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
		}
	}
	classes := e.kube.SchedulingV1().PriorityClasses()
	if list, err := classes.List(ctx, metav1.ListOptions{LabelSelector: contract.LabelManagedBy + "=" + contract.ManagedBy}); err == nil {
		for _, c := range list.Items {
			if strings.HasSuffix(c.Name, "."+ns) {
				_ = classes.Delete(ctx, c.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// unmarkedWhile runs scaffold, in fn, for prototype ns/name, a VM that
// carries vmctl's derived-VM markers as a copy of a derived VM does:
// scaffold refuses to pin such a prototype, so its vmctl labels and
// annotations are off while fn runs and back after, as when someone copies
// a derived VM's metadata onto a prototype a fleet pins already.
func unmarkedWhile(t testing.TB, ns, name string, fn func()) {
	t.Helper()
	var labels, annotations map[string]string
	updateVM(t, ns, name, func(vm *kubevirtv1.VirtualMachine) {
		labels, annotations = vm.Labels, vm.Annotations
		vm.Labels, vm.Annotations = withoutVmctlKeys(labels), withoutVmctlKeys(annotations)
	})
	fn()
	updateVM(t, ns, name, func(vm *kubevirtv1.VirtualMachine) { vm.Labels, vm.Annotations = labels, annotations })
}

// updateVM changes VM ns/name and writes it back, again on a conflict:
// KubeVirt's controller writes VMs too (their status). It returns the VM
// as written.
func updateVM(t testing.TB, ns, name string, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	vms := e.virt.KubevirtV1().VirtualMachines(ns)
	var written *kubevirtv1.VirtualMachine
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm, err := vms.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(vm)
		written, err = vms.Update(context.Background(), vm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update VM %s/%s: %v", ns, name, err)
	}
	return written
}

// withoutVmctlKeys is m without the keys of vmctl's prefix.
func withoutVmctlKeys(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !strings.HasPrefix(k, "vmctl.kubevirt.io/") {
			out[k] = v
		}
	}
	return out
}

// storedRevision is revision hash of workload's store in ns, a copy.
func storedRevision(t testing.TB, ns, workload, hash string) *kubevirtv1.VirtualMachine {
	t.Helper()
	cur, err := e.dyn.Resource(revision.StoreGVR).Namespace(ns).Get(t.Context(), revision.StoreName(workload), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := revision.FromObject(cur)
	if err != nil {
		t.Fatal(err)
	}
	rev := store.Revisions[hash]
	if rev == nil {
		t.Fatalf("store %s/%s holds no revision %s", ns, cur.GetName(), hash)
	}
	return rev.DeepCopy()
}

// pinByHand adds rev to the store of workload ("deployment/NAME") under the
// hash of its content, as a rollout would store it (the agent refuses a
// revision held under another), and pins its template to it: what neither
// scaffold nor rollout restart writes for a revision the agents refuse,
// but a hand edit, or another tool, may.
func pinByHand(t testing.TB, ns, workload string, rev *kubevirtv1.VirtualMachine) {
	t.Helper()
	hash, err := revision.Hash(rev)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"revisions": map[string]any{hash: map[string]any{
		"apiVersion": rev.APIVersion, "kind": rev.Kind, "metadata": rev.ObjectMeta, "spec": rev.Spec,
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, name, _ := strings.Cut(workload, "/")
	if _, err := e.dyn.Resource(revision.StoreGVR).Namespace(ns).Patch(t.Context(), revision.StoreName(name), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("add a revision by hand: %v", err)
	}
	kubectl(t, nil, "patch", "-n", ns, workload, "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, contract.AnnotationVMRevision, hash))
}
