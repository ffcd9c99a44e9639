//go:build e2e

package e2e

// Scenarios that only KubeVirt's own code can judge: its webhooks accept or
// reject what vmctl derives, its controllers run the VMs and report their
// status (see package kubevirt of the test harness).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// A prototype that takes its size from a VirtualMachineClusterInstancetype
// and its device preferences from a VirtualMachineClusterPreference derives
// VMs that KubeVirt accepts and runs with that size. The VMs carry both
// applied, as the revision the template pins holds them (KubeVirt's
// expand-spec), not the matchers: an instancetype changed later reaches
// them only through a rollout.
func TestInstancetypeAndPreferencePrototype(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	it := e.virt.InstancetypeV1beta1().VirtualMachineClusterInstancetypes()
	pref := e.virt.InstancetypeV1beta1().VirtualMachineClusterPreferences()
	name := ns // cluster-scoped, so named after this test's namespace
	_, err := it.Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 2},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse("384Mi")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = it.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = pref.Create(ctx, &instancetypev1beta1.VirtualMachineClusterPreference{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
			CPU:     &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(instancetypev1beta1.Cores)},
			Devices: &instancetypev1beta1.DevicePreferences{PreferredDiskBus: kubevirtv1.DiskBusVirtio},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pref.Delete(context.Background(), name, metav1.DeleteOptions{}) })

	proto := fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: itvm
spec:
  runStrategy: Halted
  instancetype: {kind: VirtualMachineClusterInstancetype, name: %[1]s}
  preference: {kind: VirtualMachineClusterPreference, name: %[1]s}
  template:
    spec:
      domain:
        devices:
          disks: [{name: containerdisk}]
          interfaces: [{name: default, masquerade: {}}]
      networks: [{name: default, pod: {}}]
      volumes:
      - name: containerdisk
        containerDisk: {image: quay.io/kubevirt/cirros-container-disk-demo:v1.6.0}
`, name)
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict([]byte(proto), &vm); err != nil {
		t.Fatal(err)
	}
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(ctx, &vm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the prototype: %v", err)
	}
	deploy(t, ns, scaffold.KindDeployment, "itvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "itvm", 2, settle)

	for pod, vm := range pairs {
		if vm.Spec.Instancetype != nil || vm.Spec.Preference != nil {
			t.Errorf("VM %s of pod %s: instancetype %+v, preference %+v; want both applied, not matched", vm.Name, pod, vm.Spec.Instancetype, vm.Spec.Preference)
		}
		if m := vm.Spec.Template.Spec.Domain.Memory; m == nil || m.Guest == nil || m.Guest.String() != "384Mi" {
			t.Errorf("VM %s of pod %s: memory %+v, want the instancetype's 384Mi in its spec", vm.Name, pod, m)
		}
		// KubeVirt applied both to the running instance.
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cpu, mem := vmi.Spec.Domain.CPU, vmi.Spec.Domain.Memory
		if cpu == nil || cpu.Cores != 2 || mem == nil || mem.Guest == nil || mem.Guest.String() != "384Mi" {
			t.Errorf("VMI %s: cpu %+v, memory %+v; want the instancetype's 2 cores (preferred topology) and 384Mi", vmi.Name, cpu, mem)
		}
		if disks := vmi.Spec.Domain.Devices.Disks; len(disks) != 1 || disks[0].Disk == nil || disks[0].Disk.Bus != kubevirtv1.DiskBusVirtio {
			t.Errorf("VMI %s disks %+v, want the preference's virtio bus", vmi.Name, disks)
		}
	}
}

// A VM revision whose VMs KubeVirt's validating webhook rejects gives no
// VM, and the webhook's own message shows on the agent's /readyz, in its log
// and in an Event on its Pod, which is not ready. scaffold and rollout
// restart pin only what KubeVirt accepted as the prototype, so the revision
// is written by hand, as anyone who may edit the store can: it keeps an
// instancetype matcher and sets the ioThreadsPolicy the instancetype sets
// too, a conflict KubeVirt refuses on every release vmctl supports.
func TestPrototypeKubeVirtRejects(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	it, err := e.virt.InstancetypeV1beta1().VirtualMachineInstancetypes(ns).Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:             instancetypev1beta1.CPUInstancetype{Guest: 1},
			Memory:          instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse("256Mi")},
			IOThreadsPolicy: ptr.To(kubevirtv1.IOThreadsPolicyShared),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "0")
	workload := "deployment/" + scaffold.DefaultName("testvm")
	bad := storedRevision(t, ns, scaffold.DefaultName("testvm"), podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision])
	bad.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Kind: "VirtualMachineInstancetype", Name: it.Name}
	domain := &bad.Spec.Template.Spec.Domain
	domain.CPU, domain.Memory = nil, nil
	domain.IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicyShared)
	pinByHand(t, ns, workload, bad)
	kubectl(t, nil, "scale", "-n", ns, workload, "--replicas=1")

	const webhookSays = "spec.template.spec.domain.ioThreadsPolicy conflicts with selected instance type"
	pod := waitWarningEvent(t, ns, "a Warning Event with KubeVirt's message", func(msg string) bool {
		return strings.Contains(msg, `admission webhook "virtualmachine-validator.kubevirt.io" denied`) && strings.Contains(msg, webhookSays)
	})
	if vms, err := derivedVMs(ctx, ns); err != nil || len(vms) != 0 {
		t.Errorf("derived VMs %v (%v), want none", vms, err)
	}
	// /readyz names the reason only: it answers anyone who can reach the
	// Pod, so KubeVirt's words stay in the log and the Event (issue 17).
	readyz := agentReadyz(t, ns, pod.Name)
	if readyz.code != http.StatusServiceUnavailable || readyz.body != "CreateFailed\n" {
		t.Errorf("agent /readyz: %d %q, want 503 CreateFailed", readyz.code, readyz.body)
	}
	if log := agentLog(t, ns, pod.Name); !strings.Contains(log, webhookSays) {
		t.Errorf("agent log lacks KubeVirt's message:\n%s", log)
	}
	waitPodReady(t, ns, pod.Name, false)
}

// status shows the node of the VMI that KubeVirt's virt-controller scheduled
// (from the launcher Pod the scheduler placed), and it is the agent's node.
func TestStatusShowsKubeVirtsVMINode(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)

	out := vmctl(t, "status", "-n", ns)
	rows := map[string][]string{} // by pod
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	for podName, vm := range pairs {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		launchers, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmi.UID)})
		if err != nil || len(launchers.Items) != 1 {
			t.Fatalf("launcher Pods of VMI %s: %d (%v), want 1", vmi.Name, len(launchers.Items), err)
		}
		node := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity)
		if vmi.Status.NodeName != node || launchers.Items[0].Spec.NodeName != node {
			t.Errorf("VMI %s on %q, its launcher Pod on %q; want both on the pinned node %s", vmi.Name, vmi.Status.NodeName, launchers.Items[0].Spec.NodeName, node)
		}
		// POD NODE READY VM VM-STATUS VMI-NODE AGE
		row := rows[podName]
		if len(row) < 6 || row[3] != vm.Name || row[4] != "Running" || row[5] != vmi.Status.NodeName {
			t.Errorf("status row of %s: %v, want VM %s Running on VMI node %s\n%s", podName, row, vm.Name, vmi.Status.NodeName, out)
		}
	}
}

// The derived VMs are stored as KubeVirt's mutating webhook and
// virt-controller left them, with defaults vmctl never wrote; diff reports
// none of that as drift.
func TestDiffIgnoresKubeVirtDefaults(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)
	proto, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, "testvm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	manifest, err := os.ReadFile(repoFile("testdata/testvm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"architecture", "machine", "firmware"} {
		if strings.Contains(string(manifest), field+":") {
			t.Fatalf("testdata/testvm.yaml sets %s; this test needs fields only KubeVirt sets", field)
		}
	}
	for _, vm := range pairs {
		got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := got.Spec.Template.Spec
		// None of these is in testdata/testvm.yaml: KubeVirt set them.
		if spec.Architecture == "" || spec.Domain.Machine == nil || spec.Domain.Firmware == nil || spec.Domain.Firmware.UUID == "" {
			t.Errorf("VM %s lacks KubeVirt's defaults (architecture %q, machine %+v, firmware %+v)", got.Name, spec.Architecture, spec.Domain.Machine, spec.Domain.Firmware)
			continue
		}
		// vmctl clears the prototype's firmware UUID; KubeVirt gave each
		// derived VM its own.
		if protoFW := proto.Spec.Template.Spec.Domain.Firmware; protoFW != nil && protoFW.UUID == spec.Domain.Firmware.UUID {
			t.Errorf("VM %s has the prototype's firmware UUID %s", got.Name, protoFW.UUID)
		}
	}
	out, stderr, code := vmctlCode(t, "diff", "-n", ns)
	if code != 0 || out != "" || !strings.Contains(stderr, "0 of 2 derived VMs drifted") {
		t.Errorf("diff over VMs KubeVirt defaulted: exit %d, output:\n%s%s", code, out, stderr)
	}
}

type probeResult struct {
	code int
	body string
}

// probeAddress finds the agent's --probe-address in the kubelet double's
// log header of the agent's latest start.
var probeAddress = regexp.MustCompile(`--probe-address=(\S+)`)

// agentReadyz asks the running agent of pod for /readyz, as the kubelet does.
func agentReadyz(t *testing.T, ns, pod string) probeResult {
	t.Helper()
	m := probeAddress.FindAllStringSubmatch(agentLog(t, ns, pod), -1)
	if len(m) == 0 {
		t.Fatalf("no --probe-address in the agent log of %s/%s", ns, pod)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + m[len(m)-1][1] + "/readyz")
	if err != nil {
		t.Fatalf("agent /readyz: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return probeResult{resp.StatusCode, string(body)}
}

func agentLog(t *testing.T, ns, pod string) string {
	t.Helper()
	b, err := os.ReadFile(e.kubelet.LogPath(ns, pod))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitPodReady waits until pod's Ready condition is ready.
func waitPodReady(t *testing.T, ns, pod string, ready bool) {
	t.Helper()
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	eventually(t, settle, fmt.Sprintf("pod %s Ready=%s", pod, want), func(ctx context.Context) (bool, string, error) {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == want, string(c.Status), nil
			}
		}
		return false, "no Ready condition", nil
	})
}
