//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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

// statusRows runs `vmctl status -o json` in ns and returns its rows.
func statusRows(t *testing.T, ns string) []status.Row {
	t.Helper()
	out := vmctl(t, "status", "-n", ns, "-o", "json")
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
	handler, err := kubevirt.NewForConfig(e.kv.HandlerConfig)
	if err != nil {
		t.Fatal(err)
	}
	vmis := handler.KubevirtV1().VirtualMachineInstances(ns)
	eventually(t, settle, "VMI "+name+" reports address "+ip, func(ctx context.Context) (bool, string, error) {
		list, err := vmis.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d VMIs", len(list.Items)), nil
		}
		vmi := &list.Items[0]
		vmi.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: ip, IPs: []string{ip}}}
		_, err = vmis.Update(ctx, vmi, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
}
