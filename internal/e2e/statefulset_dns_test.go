//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// TestStatefulSetVMsKeepTheirDNSNames scaffolds a StatefulSet "web" of two
// and checks that each VM takes its Pod's DNS identity: hostname web-N and
// subdomain web on the VM and its VMI, and in the EndpointSlices of the
// headless Service web (which kube-controller-manager's endpointslice
// controller writes, and cluster DNS serves as web-N.web.<namespace>.svc)
// an endpoint of hostname web-N whose target is the VM's launcher Pod, not
// the agent. After the Pod web-0 is deleted and the StatefulSet makes it
// again, the new VM has the same name.
func TestStatefulSetVMsKeepTheirDNSNames(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindStatefulSet, "testvm", "--name", "web", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, settle)

	svc, err := e.kube.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service web has clusterIP %q, want None (headless)", svc.Spec.ClusterIP)
	}
	for pod, vm := range pairs {
		checkDNSIdentity(t, ns, pod, vm)
	}

	launchers := launcherPods(t, ns, pairs)
	if launchers == nil {
		ci.Skip(t, "the VMIs have no launcher Pods: the virt-controller double makes none, so no EndpointSlice can name them; "+
			"with KubeVirt's real virt-controller this test checks web-N.web in the Service's EndpointSlices")
	}
	waitEndpoints(t, ns, launchers)

	// web-0 goes; the StatefulSet makes it again, its agent replaces the VM,
	// and the name web-0.web follows the new VM.
	old := pairs["web-0"]
	if err := e.kube.CoreV1().Pods(ns).Delete(t.Context(), "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pairs = waitReplaced(t, ns, "testvm", "web-0", old.UID, 2)
	checkDNSIdentity(t, ns, "web-0", pairs["web-0"])
	launchers = launcherPods(t, ns, pairs)
	waitEndpoints(t, ns, launchers)
}

// checkDNSIdentity checks pod's VM and its VMI for hostname pod and
// subdomain web, and the label the Service selects.
func checkDNSIdentity(t *testing.T, ns, pod string, vm kubevirtv1.VirtualMachine) {
	t.Helper()
	spec := vm.Spec.Template.Spec
	if spec.Hostname != pod || spec.Subdomain != "web" {
		t.Errorf("VM %s: hostname %q subdomain %q, want %q and web", vm.Name, spec.Hostname, spec.Subdomain, pod)
	}
	if got := vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain]; got != "web" {
		t.Errorf("VM %s: VMI template label %s = %q, want web", vm.Name, contract.LabelSubdomain, got)
	}
	eventually(t, settle, "the VMI of "+vm.Name, func(ctx context.Context) (bool, string, error) {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no VMI", nil
		}
		if err != nil {
			return false, "", err
		}
		if vmi.Spec.Hostname != pod || vmi.Spec.Subdomain != "web" {
			t.Errorf("VMI %s: hostname %q subdomain %q, want %q and web", vmi.Name, vmi.Spec.Hostname, vmi.Spec.Subdomain, pod)
		}
		return true, "", nil
	})
}

// launcherPods maps each pair's hostname (its Pod's name) to its VMI's
// launcher Pod, once every VMI names one; nil when the VMIs have none at
// all (no real virt-controller).
func launcherPods(t *testing.T, ns string, pairs map[string]kubevirtv1.VirtualMachine) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for pod, vm := range pairs {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(t.Context(), vm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(vmi.Status.ActivePods) == 0 {
			return nil
		}
		for uid := range vmi.Status.ActivePods {
			out[pod] = uid
		}
	}
	return out
}

// waitEndpoints waits until the EndpointSlices of Service web in ns hold
// exactly one ready endpoint per hostname in launchers, targeting that
// launcher Pod.
func waitEndpoints(t *testing.T, ns string, launchers map[string]types.UID) {
	t.Helper()
	eventually(t, settle, "Service web's EndpointSlices name each VM's launcher Pod", func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, "", err
		}
		got := map[string]types.UID{}
		var seen []string
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				host, target := "", ""
				if ep.Hostname != nil {
					host = *ep.Hostname
				}
				if ep.TargetRef != nil {
					target = ep.TargetRef.Kind + "/" + ep.TargetRef.Name
					if ep.TargetRef.Kind == "Pod" && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
						got[host] = ep.TargetRef.UID
					}
				}
				seen = append(seen, fmt.Sprintf("%s -> %s %v", host, target, ep.Addresses))
			}
		}
		slices.Sort(seen)
		return len(got) == len(launchers) && equalUIDs(got, launchers), strings.Join(seen, "; "), nil
	})
}

func equalUIDs(a, b map[string]types.UID) bool {
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// TestStatefulSetAgentTokenTakesNoOtherDNSName: with the bound token of
// web-0's agent, the admission policy lets the agent create its own VM as
// derived (hostname web-0, subdomain web) and refuses the same VM with
// another Pod's hostname, another subdomain, or the Service's label on a
// VM of another subdomain, any of which would put it in DNS under a name
// that is not its own.
func TestStatefulSetAgentTokenTakesNoOtherDNSName(t *testing.T) {
	const (
		dnsRule    = "hostname or subdomain is not its own"
		labelsRule = "labels or its template's are not the VM revision's"
	)
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	foreign := plainVM(proto, "not-vmctl")
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deploy(t, ns, scaffold.KindStatefulSet, "testvm", "--name", "web", "--replicas", "2")
	waitPaired(t, ns, "testvm", 2, settle)
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods["web-0"]
	kube, virt := agentClients(t, ns, "web", pod)
	waitPolicyInForce(t, &agentFleet{ns: ns, virt: virt, kube: kube, foreign: "not-vmctl"})

	derived := func(t *testing.T) *kubevirtv1.VirtualMachine {
		return derivedFromRevision(t, "web", pod, derive.Options{Subdomain: "web"})
	}
	for _, tt := range []struct {
		name   string
		change func(*kubevirtv1.VirtualMachine)
		allow  bool
		says   string // the rule that refuses it
	}{
		{"its own VM, as derived", func(*kubevirtv1.VirtualMachine) {}, true, ""},
		{"another Pod's hostname", func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Hostname = "web-1" }, false, dnsRule},
		{"another subdomain", func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Subdomain = "db" }, false, dnsRule},
		// The Service's label moved with it: the labels' rule refuses first.
		{"another subdomain, labelled for it", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Subdomain = "db"
			vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = "db"
		}, false, labelsRule},
		{"the Service's label on another subdomain", func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Subdomain = "" }, false, dnsRule},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vm := derived(t)
			tt.change(vm)
			_, err := virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), vm, metav1.CreateOptions{})
			// Admission runs before storage: AlreadyExists means it let the
			// create through.
			allowed := err == nil || apierrors.IsAlreadyExists(err)
			if allowed != tt.allow {
				t.Fatalf("create: %v; want allowed=%v", err, tt.allow)
			}
			if !allowed && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.says)) {
				t.Errorf("refused with %v, want the policy's Forbidden saying %q", err, tt.says)
			}
		})
	}
}
