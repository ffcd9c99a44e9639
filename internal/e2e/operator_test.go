//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// createOrphan creates, as the admin, the VM an agent of a Pod named pod
// would derive from proto, for a Pod that never existed: vmctl's labels and
// annotations, but no ownerReference, so nothing but gc removes it.
func createOrphan(t *testing.T, proto *kubevirtv1.VirtualMachine, pod string) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(proto, derive.Pod{
		Name: pod, Namespace: proto.Namespace, UID: types.UID("00000000-0000-0000-0000-" + fmt.Sprintf("%012d", len(pod))),
		Node: e.cluster.Nodes[0],
	}, derive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm.OwnerReferences = nil
	created, err := e.virt.KubevirtV1().VirtualMachines(proto.Namespace).Create(context.Background(), vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create orphan %s: %v", vm.Name, err)
	}
	return created
}

// statusRows runs `vmctl status -o json` in ns, with flags, and returns
// its rows.
func statusRows(t *testing.T, ns string, flags ...string) []status.Row {
	t.Helper()
	out := vmctl(t, append([]string{"status", "-n", ns, "-o", "json"}, flags...)...)
	var list struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Items      []status.Row `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, out)
	}
	if list.Kind != status.ListKind || list.APIVersion != status.ListAPIVersion {
		t.Errorf("status -o json: kind %q apiVersion %q, want %q %q", list.Kind, list.APIVersion, status.ListKind, status.ListAPIVersion)
	}
	return list.Items
}

func TestStatus(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)

	table := vmctl(t, "status", "-n", ns)
	for pod, vm := range pairs {
		if !strings.Contains(table, pod) || !strings.Contains(table, vm.Name) {
			t.Errorf("status does not name pod %s and VM %s:\n%s", pod, vm.Name, table)
		}
	}
	for _, p := range []string{status.ProblemPodGone, status.ProblemPodReplaced, "missing", "another node"} {
		if strings.Contains(table, p) {
			t.Errorf("status of a healthy deployment shows problem %q:\n%s", p, table)
		}
	}
	if _, _, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 0 {
		t.Errorf("status --exit-code of a healthy deployment: exit %d, want 0", code)
	}

	// -v=6, as kubectl's, logs each request client-go makes.
	_, stderr, code := vmctlCode(t, "status", "-n", ns, "-v=6")
	for _, path := range []string{"/apis/kubevirt.io/v1/namespaces/" + ns + "/virtualmachines", "/api/v1/namespaces/" + ns + "/pods"} {
		if code != 0 || !strings.Contains(stderr, path) || !strings.Contains(stderr, "200 OK") {
			t.Errorf("status -v=6: exit %d, want 0 and a logged 200 OK GET of %s", code, path)
		}
	}

	rows := statusRows(t, ns)
	if len(rows) != 2 {
		t.Fatalf("status -o json: %d rows, want 2: %+v", len(rows), rows)
	}
	for _, r := range rows {
		vm, ok := pairs[r.Pod]
		if !ok || r.VM != vm.Name || len(r.Problems) != 0 {
			t.Errorf("status row pod %q vm %q problems %v; pairs %v", r.Pod, r.VM, r.Problems, sets.KeySet(pairs).UnsortedList())
		}
	}

	// -o wide shows the address virt-handler reports for a running guest.
	// Its stand-in here reports none, so the test writes one as
	// virt-handler would: an update, as virt-handler (virt-api takes a VMI's
	// status only from KubeVirt's own identities).
	vmName := pairs[firstKey(pairs)].Name
	reportVMIAddress(t, ns, vmName, "10.244.3.9")
	var vmLine string
	for _, line := range strings.Split(vmctl(t, "status", "-n", ns, "-o", "wide"), "\n") {
		if strings.Contains(line, vmName) {
			vmLine = line
		}
	}
	if !strings.Contains(vmLine, "10.244.3.9") {
		t.Errorf("status -o wide does not show VM %s's IP 10.244.3.9: %q", vmName, vmLine)
	}

	orphan := createOrphan(t, proto, "ghost")
	table = vmctl(t, "status", "-n", ns)
	if !strings.Contains(table, orphan.Name) || !strings.Contains(table, status.ProblemPodGone) {
		t.Errorf("status does not show %s as %q:\n%s", orphan.Name, status.ProblemPodGone, table)
	}
	out, stderr, code := vmctlCode(t, "status", "-n", ns, "--exit-code")
	if code != 1 {
		t.Errorf("status --exit-code with an orphan: exit %d, want 1\n%s%s", code, out, stderr)
	}
	var problems int
	for _, r := range statusRows(t, ns) {
		if r.VM == orphan.Name {
			problems++
			if len(r.Problems) != 1 || r.Problems[0] != status.ProblemPodGone {
				t.Errorf("orphan row problems %v, want [%s]", r.Problems, status.ProblemPodGone)
			}
		}
	}
	if problems != 1 {
		t.Errorf("status -o json has %d rows for orphan %s, want 1", problems, orphan.Name)
	}
}

func TestGC(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)
	orphan := createOrphan(t, proto, "ghost")

	// A VM vmctl did not make, in the same namespace: gc must never touch it.
	stranger := proto.DeepCopy()
	stranger.ObjectMeta = metav1.ObjectMeta{Name: "not-vmctl", Namespace: ns, Labels: map[string]string{"app": "other"}}
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	all := func() sets.Set[string] {
		t.Helper()
		list, err := e.virt.KubevirtV1().VirtualMachines(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := sets.New[string]()
		for _, vm := range list.Items {
			if vm.DeletionTimestamp == nil {
				s.Insert(vm.Name)
			}
		}
		return s
	}
	before := all()
	want := sets.New(proto.Name, stranger.Name, orphan.Name)
	for _, vm := range pairs {
		want.Insert(vm.Name)
	}
	if !before.Equal(want) {
		t.Fatalf("VMs before gc: %v, want %v", sets.List(before), sets.List(want))
	}

	out := vmctl(t, "gc", "-n", ns, "--min-age", "0s", "--dry-run=client")
	if !strings.Contains(out, orphan.Name) {
		t.Errorf("gc --dry-run=client does not name orphan %s:\n%s", orphan.Name, out)
	}
	for _, vm := range pairs {
		if strings.Contains(out, vm.Name) {
			t.Errorf("gc --dry-run=client names paired VM %s:\n%s", vm.Name, out)
		}
	}
	if got := all(); !got.Equal(before) {
		t.Fatalf("gc --dry-run=client changed the VMs: %v, want %v", sets.List(got), sets.List(before))
	}

	out = vmctl(t, "gc", "-n", ns, "--min-age", "0s")
	if !strings.Contains(out, orphan.Name) {
		t.Errorf("gc does not name orphan %s:\n%s", orphan.Name, out)
	}
	eventually(t, settle, "orphan deleted", func(ctx context.Context) (bool, string, error) {
		_, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, orphan.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "orphan still there", err
	})
	if got := all(); !got.Equal(before.Clone().Delete(orphan.Name)) {
		t.Errorf("VMs after gc: %v, want %v less %s", sets.List(got), sets.List(before), orphan.Name)
	}
	after := waitPaired(t, ns, "testvm", 2, settle)
	for pod, vm := range pairs {
		if after[pod].UID != vm.UID {
			t.Errorf("paired VM %s was replaced or deleted by gc", vm.Name)
		}
	}
}

func TestDiff(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)

	if out, stderr, code := vmctlCode(t, "diff", "-n", ns); code != 0 {
		t.Fatalf("diff right after deploy: exit %d, want 0\n%s%s", code, out, stderr)
	}

	pod := firstKey(pairs)
	name := pairs[pod].Name
	eventually(t, settle, "derived VM's memory changed", func(ctx context.Context) (bool, string, error) {
		vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		vm.Spec.Template.Spec.Domain.Memory.Guest.Set(512 << 20)
		_, err = e.virt.KubevirtV1().VirtualMachines(ns).Update(ctx, vm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
	out, stderr, code := vmctlCode(t, "diff", "-n", ns)
	if code != 1 {
		t.Fatalf("diff after changing %s: exit %d, want 1\n%s%s", name, code, out, stderr)
	}
	if !strings.Contains(out, name) || !strings.Contains(out, "512Mi") || !strings.Contains(out, "256Mi") {
		t.Errorf("diff does not show %s's memory change 512Mi -> 256Mi:\n%s", name, out)
	}
	for _, vm := range pairs {
		if vm.Name != name && strings.Contains(out, vm.Name) {
			t.Errorf("diff names unchanged VM %s:\n%s", vm.Name, out)
		}
	}
	if !strings.Contains(stderr, "1 of 2 derived VMs drifted") {
		t.Errorf("diff summary: want %q in\n%s", "1 of 2 derived VMs drifted", stderr)
	}
}

// TestMissingPrototype: status and diff given a prototype name that is not
// there say so, and diff fails, rather than report that nothing was found.
func TestMissingPrototype(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")

	noVM := "no VM testmv in " + ns + " namespace: check the prototype's name, or pass -n or -A"
	out, stderr, code := vmctlCode(t, "diff", "testmv", "-n", ns)
	if code != 2 || !strings.Contains(stderr, noVM) {
		t.Errorf("diff testmv: exit %d, stderr %q; want 2 and %q", code, stderr, noVM)
	}
	if out != "" {
		t.Errorf("diff testmv printed %q", out)
	}
	if out, stderr, code = vmctlCode(t, "status", "testmv", "-n", ns); code != 0 || out != "" || !strings.Contains(stderr, noVM) {
		t.Errorf("status testmv: exit %d, stdout %q, stderr %q; want 0, nothing and %q", code, out, stderr, noVM)
	}

	// The prototype is there, with no agents yet: nothing is wrong.
	if out, stderr, code = vmctlCode(t, "diff", "testvm", "-n", ns); code != 0 || !strings.Contains(stderr, "0 of 0 derived VMs drifted") {
		t.Errorf("diff testvm: exit %d, stdout %q, stderr %q; want 0 and 0 of 0 drifted", code, out, stderr)
	}
	want := "No vmctl agents or derived VMs of prototype testvm found in " + ns + " namespace.\n"
	if _, stderr, code = vmctlCode(t, "status", "testvm", "-n", ns); code != 0 || stderr != want {
		t.Errorf("status testvm: exit %d, stderr %q; want 0 and %q", code, stderr, want)
	}
}

// reportVMIAddress sets the VMI's interface "default" to ip as KubeVirt's
// virt-handler does once the guest runs, with virt-handler's identity
// (which may list VMIs, not get them).
func reportVMIAddress(t *testing.T, ns, name, ip string) {
	t.Helper()
	var handler kubevirt.Interface // virt-handler of the VMI's node, made once
	eventually(t, settle, "VMI "+name+" reports address "+ip, func(ctx context.Context) (bool, string, error) {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if vmi.Status.NodeName == "" {
			return false, "VMI on no node yet", nil
		}
		if handler == nil {
			// virt-api takes a VMI's status only from the virt-handler
			// of the VMI's node: a token bound to that Node.
			cfg, err := e.kv.ConfigOn(ctx, vmi.Status.NodeName)
			if err != nil {
				return false, "", err
			}
			if handler, err = kubevirt.NewForConfig(cfg); err != nil {
				return false, "", err
			}
		}
		vmi.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: ip, IPs: []string{ip}}}
		_, err = handler.KubevirtV1().VirtualMachineInstances(ns).Update(ctx, vmi, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
}

// running is a kubectl-vmctl process started by startVmctl.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// syncBuffer is a bytes.Buffer a process may write while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startVmctl starts kubectl-vmctl as the cluster admin with env added to
// the environment; it is killed when t ends, if it still runs.
func startVmctl(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	r := &running{cmd: exec.Command(e.binary, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	r.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig, "NO_COLOR=1"), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// exited waits up to timeout for the process to end and reports whether
// it did.
func (r *running) exited(timeout time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// grantOperator lets user list and watch (verbs) Pods, VMs and VMIs in ns,
// as a namespace's operator would be allowed.
func grantOperator(t *testing.T, ns, user string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs},
			{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: verbs},
		},
	}
	if _, err := e.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := e.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the authorizer through an informer: wait until it tells.
	eventually(t, settle, "RBAC for "+user+" in effect", func(ctx context.Context) (bool, string, error) {
		review, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verbs[0], Group: "kubevirt.io", Resource: "virtualmachineinstances",
			}},
		}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, "not yet", err
	})
}

// TestStatusWatchStopsWhenForbidden: a VM here records its Pod in another
// namespace, where the user may not list Pods (anyone who can create a VM
// here can write that annotation). Plain status fails with "pods is
// forbidden"; status --watch must stop with the same error, not wait for a
// list that never comes. A user who may list but not watch is told so at
// once, not shown a table that never changes.
func TestStatusWatchStopsWhenForbidden(t *testing.T) {
	ns := namespace(t)
	secret := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	vm, err := derive.VM(proto, derive.Pod{Name: "elsewhere", Namespace: secret, UID: "00000000-0000-0000-0000-000000000001", Node: e.cluster.Nodes[0]},
		derive.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	vm.OwnerReferences = nil
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantOperator(t, ns, "dev", "list", "watch")

	_, statusErr, code := vmctlCode(t, "status", "-n", ns, "--as=dev")
	if code == 0 || !strings.Contains(statusErr, "is forbidden: User \"dev\" cannot list resource \"pods\"") {
		t.Fatalf("status as dev: exit %d, stderr %q; want pods forbidden", code, statusErr)
	}
	w := startVmctl(t, nil, "status", "-n", ns, "--as=dev", "--watch")
	if !w.exited(30 * time.Second) {
		t.Fatalf("status --watch as dev still runs after 30s without a word on stdout (%q); stderr:\n%s", w.stdout, w.stderr)
	}
	if w.code == 0 || w.stdout.String() != "" || !strings.Contains(w.stderr.String(), firstLine(statusErr)) {
		t.Errorf("status --watch as dev: exit %d, stdout %q, stderr:\n%s\nwant status's error: %s", w.code, w.stdout, w.stderr, statusErr)
	}

	// May list but not watch: the refused watch.
	other := namespace(t)
	grantOperator(t, other, "lister", "list")
	createOrphan(t, createPrototype(t, other, "testvm.yaml"), "ghost")
	w = startVmctl(t, nil, "status", "-n", other, "--as=lister", "--watch")
	if !w.exited(30 * time.Second) {
		t.Fatalf("status --watch as lister still runs after 30s; stdout %q; stderr:\n%s", w.stdout, w.stderr)
	}
	if w.code == 0 || !strings.Contains(w.stderr.String(), `error: watch `) || !strings.Contains(w.stderr.String(), `User "lister" cannot watch resource`) {
		t.Errorf("status --watch as lister: exit %d, stdout %q, stderr:\n%s\nwant the refused watch", w.code, w.stdout, w.stderr)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// TestStatusFindsUnlabelledAgentPods runs an agent by hand for a plain
// Pod, as docs/tour.md does: the Pod lacks scaffold's labels, but status
// (and status --watch) find it by the identity its VM records, pair them and
// see no problem; gc leaves the VM alone.
func TestStatusFindsUnlabelledAgentPods(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	kubectl(t, nil, "run", "manual", "-n", ns, "--image=registry.k8s.io/pause:3.10", "--restart=Never")
	kubectl(t, nil, "wait", "-n", ns, "--for=condition=Ready", "pod/manual", "--timeout=1m")
	pod, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), "manual", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pinned as scaffold's templates are: the agent derives only from a
	// revision its workload's store holds.
	pin := pinnedAgent(t, ns)
	agent := startVmctl(t, []string{"NODE_NAME=" + pod.Spec.NodeName, "POD_UID=" + string(pod.UID), "POD_NAMESPACE=" + ns, pin[1]},
		"agent", "testvm", "--hostname-override", "manual", "--probe-address", "127.0.0.1:0", pin[0])
	eventually(t, settle, "the manual agent's VM ready", func(ctx context.Context) (bool, string, error) {
		vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, "testvm-manual", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no VM; agent log: " + agent.stderr.String(), nil
		}
		return err == nil && vm.Status.Ready, "not ready", err
	})

	rows := statusRows(t, ns)
	if len(rows) != 1 || rows[0].Pod != "manual" || rows[0].PodUID != pod.UID || rows[0].VM != "testvm-manual" || len(rows[0].Problems) != 0 {
		t.Errorf("status -o json: %+v, want the VM paired with pod manual, no problems", rows)
	}
	if out, stderr, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 0 {
		t.Errorf("status --exit-code: exit %d, want 0\n%s%s", code, out, stderr)
	}
	w := startVmctl(t, nil, "status", "-n", ns, "--watch")
	eventually(t, settle, "status --watch's first table", func(context.Context) (bool, string, error) {
		return strings.Contains(w.stdout.String(), "testvm-manual"), w.stdout.String() + w.stderr.String(), nil
	})
	if table := w.stdout.String(); !strings.Contains(table, "manual ") || strings.Contains(table, "orphaned") {
		t.Errorf("status --watch does not pair the VM with pod manual:\n%s", table)
	}
	if out := vmctl(t, "gc", "-n", ns, "--min-age=0s"); out != "" {
		t.Errorf("gc deleted something: %s", out)
	}

	_ = agent.cmd.Process.Signal(syscall.SIGTERM)
	if !agent.exited(time.Minute) || agent.code != 0 {
		t.Errorf("the agent did not exit 0 within a minute of SIGTERM (exit %d):\n%s", agent.code, agent.stderr)
	}
}

// TestGCSparesPrototypes: prototypes made by copying a derived VM whose Pod
// is gone, one under the name it had, one renamed, each run by agents. gc
// deletes neither: the renamed one does not bear the name an agent gives,
// and a live agent Pod names the other as its prototype.
func TestGCSparesPrototypes(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	kept := createOrphan(t, proto, "ghost") // testvm-ghost, as derived for a Pod long gone
	golden, err := derive.VM(proto, derive.Pod{Name: "gone", Namespace: ns, UID: "00000000-0000-0000-0000-000000000002", Node: e.cluster.Nodes[0]}, derive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	golden.Name, golden.OwnerReferences = "golden", nil
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), golden, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unmarkedWhile(t, ns, kept.Name, func() { deploy(t, ns, scaffold.KindDeployment, kept.Name, "--name", "from-copy") })
	unmarkedWhile(t, ns, "golden", func() { deploy(t, ns, scaffold.KindDeployment, "golden", "--name", "from-golden") })
	eventually(t, settle, "both agents running", func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		return err == nil && len(pods) == 2, fmt.Sprintf("%d agent pods", len(pods)), err
	})

	out, stderr, code := vmctlCode(t, "gc", "-n", ns, "--min-age=0s")
	if code != 0 || out != "" {
		t.Errorf("gc: exit %d, deleted:\n%s", code, out)
	}
	if !strings.Contains(stderr, "virtualmachine.kubevirt.io/"+kept.Name+" in "+ns+" namespace left alone: pod "+ns+"/from-copy-") {
		t.Errorf("gc does not say it spared %s:\n%s", kept.Name, stderr)
	}
	for _, name := range []string{kept.Name, "golden"} {
		if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("prototype %s: %v", name, err)
		}
	}
}

// TestOperatorCommandsReadOnlyDerivedVMs: on a real API server, status and
// diff LIST VMs only by vmctl's labels or by a prototype's name
// (fieldSelector metadata.name, which custom resources support), never all
// VMs of a namespace; a VM vmctl does not manage is never read.
func TestOperatorCommandsReadOnlyDerivedVMs(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	waitPaired(t, ns, "testvm", 1, settle)
	stranger := proto.DeepCopy()
	stranger.ObjectMeta = metav1.ObjectMeta{Name: "not-vmctl", Namespace: ns}
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"diff"}, {"status", "-A"}, {"diff", "-A"}} {
		// diff -A exits 1 when other tests' VMs drifted.
		_, stderr, code := vmctlCode(t, append(args, "-n", ns, "-v=6")...)
		if code > 1 || code == 1 && args[0] == "status" {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
			continue
		}
		var lists int
		for _, line := range strings.Split(stderr, "\n") {
			_, url, ok := strings.Cut(line, `verb="GET" url="`)
			if !ok || !strings.Contains(url, "/virtualmachines?") {
				continue
			}
			lists++
			if !strings.Contains(url, "labelSelector=vmctl.kubevirt.io") && !strings.Contains(url, "fieldSelector=metadata.name%3D") {
				t.Errorf("%v read VMs neither by vmctl's labels nor by a prototype's name: %s", args, url)
			}
			if !strings.Contains(line, "200 OK") {
				t.Errorf("%v: %s", args, line)
			}
		}
		if lists < 2 {
			t.Errorf("%v: %d VM LISTs logged, want the derived VMs' and the prototype's:\n%s", args, lists, stderr)
		}
	}
}
