//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// sizedKey labels and taints the nodes of real size that the reservation
// tests add, with the test's namespace as value, so no other test's Pods
// land there.
const sizedKey = "e2e.vmctl.kubevirt.io/sized"

// addSizedNodes adds n kwok nodes of 8 CPUs and 32Gi, labelled and tainted
// for ns only, and deletes them when the test ends.
func addSizedNodes(t testing.TB, ns string, n int) []string {
	t.Helper()
	names := sizedNodeNames(ns, 0, n)
	addNodesOfSize(t, ns, names, "8", "32Gi")
	return names
}

// sizedNodeNames names n sized nodes of ns, from the first-th on: node
// names are label values, so of ns only as much as fits 63 characters.
func sizedNodeNames(ns string, first, n int) []string {
	const keep = 63 - len("sized--999")
	short := strings.TrimLeft(ns[max(0, len(ns)-keep):], "-")
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("sized-%s-%d", short, first+i))
	}
	return names
}

// addNodesOfSize adds kwok nodes of the names given, with cpu and memory
// allocatable, labelled and tainted for ns only, and deletes them when the
// test ends.
func addNodesOfSize(t testing.TB, ns string, names []string, cpu, memory string) {
	t.Helper()
	t.Cleanup(func() {
		for _, name := range names {
			_ = e.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := e.cluster.AddNodesWith(ctx, names, func(node *corev1.Node) {
		node.Labels[sizedKey] = ns
		for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
			list[corev1.ResourceCPU] = apiresource.MustParse(cpu)
			list[corev1.ResourceMemory] = apiresource.MustParse(memory)
			list[corev1.ResourcePods] = apiresource.MustParse("110")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		taintNode(t, name, corev1.Taint{Key: sizedKey, Value: ns, Effect: corev1.TaintEffectNoSchedule})
	}
}

// bigPrototype is testvm with 12Gi of guest memory, for the sized nodes of
// ns only.
func bigPrototype(t *testing.T, ns string) {
	t.Helper()
	sizedPrototype(t, ns, "12Gi")
}

// sizedPrototype is testvm with guest memory, for the sized nodes of ns
// only.
func sizedPrototype(t testing.TB, ns, guest string) {
	t.Helper()
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		spec := &vm.Spec.Template.Spec
		spec.Domain.Memory.Guest = ptrQuantity(guest)
		spec.NodeSelector = map[string]string{sizedKey: ns}
		spec.Tolerations = []corev1.Toleration{{Key: sizedKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
	})
}

// scale sets the replicas of Deployment name in ns.
func scale(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	kubectl(t, nil, "scale", "deployment", name, "-n", ns, fmt.Sprintf("--replicas=%d", replicas))
}

// checkResized checks that every scheduled agent Pod in ns that has a VM
// asks for the agent's own requests only: it gave its VM's room back.
func checkResized(t *testing.T, ns string) {
	t.Helper()
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	own := podtemplate.OwnRequests()
	for name, pod := range pods {
		got := pod.Spec.Containers[0].Resources.Requests
		if got.Memory().Cmp(*own.Memory()) != 0 || got.Cpu().Cmp(*own.Cpu()) != 0 {
			t.Errorf("Pod %s asks for %s after making its VM, want its own %s", name, contract.FormatResources(got), contract.FormatResources(own))
		}
	}
}

// pendingAgents returns the agent Pods of Deployment name in ns that the
// scheduler could not place, with its message.
func pendingAgents(ctx context.Context, ns, name string) (map[string]string, error) {
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelInstance + "=" + name})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				out[p.Name] = c.Message
			}
		}
	}
	return out, nil
}

// TestReservationPendingUntilRoom: on two nodes of 32Gi, agents of a 12Gi
// prototype hold their VMs' room, so only four fit (two VMs a node); the
// next two wait Pending with the scheduler's "Insufficient memory", and no
// VM is made for them nor stuck unschedulable. The running agents gave the
// room back to their VMs (their Pods ask for their own only). When another
// Deployment of the prototype scales in, the Pending agents run and their
// VMs are made.
func TestReservationPendingUntilRoom(t *testing.T) {
	ns := namespace(t)
	addSizedNodes(t, ns, 2)
	bigPrototype(t, ns)
	start := time.Now()
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--name", "first", "--replicas", "4")
	waitPaired(t, ns, "testvm", 4, settle)
	t.Logf("4 agents and VMs of 12Gi on 2 nodes of 32Gi: paired in %v", time.Since(start).Round(time.Millisecond))
	checkResized(t, ns)

	deploy(t, ns, scaffold.KindDeployment, "testvm", "--name", "second", "--replicas", "2")
	var pending map[string]string
	eventually(t, settle, "2 agents of second Pending for want of memory", func(ctx context.Context) (bool, string, error) {
		var err error
		if pending, err = pendingAgents(ctx, ns, "second"); err != nil {
			return false, "", err
		}
		n := 0
		for _, msg := range pending {
			if strings.Contains(msg, "Insufficient memory") {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%v", pending), nil
	})
	for name, msg := range pending {
		t.Logf("Pending %s: %s", name, msg)
	}
	// The scheduler has decided; only time can tell that nothing places
	// them after all, or makes a VM for them: keep looking for a while.
	throughout(t, 5*time.Second, "second's agents Pending, and no VM of theirs", func(ctx context.Context) (string, error) {
		now, err := pendingAgents(ctx, ns, "second")
		if err != nil {
			return "", err
		}
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return "", err
		}
		var problems []string
		for name := range pending {
			if _, still := now[name]; !still {
				problems = append(problems, "Pod "+name+" no longer Pending")
			}
			if _, ok := vms[shortVMName("testvm", name)]; ok {
				problems = append(problems, "Pending Pod "+name+" has a VM")
			}
		}
		for name, vm := range vms {
			if vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusUnschedulable {
				problems = append(problems, fmt.Sprintf("VM %s is %s", name, vm.Status.PrintableStatus))
			}
		}
		if len(vms) != 4 {
			problems = append(problems, fmt.Sprintf("%d VMs, want 4", len(vms)))
		}
		return strings.Join(problems, "; "), nil
	})

	start = time.Now()
	scale(t, ns, "first", 2)
	eventually(t, settle, "second's Pending agents to run with their VMs", func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, "", err
		}
		for name := range pending {
			vm, ok := vms[shortVMName("testvm", name)]
			if _, running := pods[name]; !running || !ok || !vm.Status.Ready {
				return false, describe(pods, vms), nil
			}
		}
		return true, "", nil
	})
	t.Logf("after first scaled in to 2, second's 2 Pending agents ran with their VMs in %v", time.Since(start).Round(time.Millisecond))
	waitPaired(t, ns, "testvm", 4, settle)
	checkResized(t, ns)
	checkNoProblems(t, ns)
}

// TestReservationQuota: a ResourceQuota that fits N VMs (each its launcher
// Pod and its agent's own share) admits N reserving agents, and their N VMs
// all get launcher Pods: the quota counts each VM once, as the agent's
// reservation until the resize and as the launcher Pod after.
func TestReservationQuota(t *testing.T) {
	const n = 3
	ns := namespace(t)
	addSizedNodes(t, ns, 2)
	bigPrototype(t, ns)
	manifests := vmctl(t, "scaffold", "deployment", "testvm", "-n", ns, "--grace-period", "60", "--replicas", fmt.Sprint(n))
	reservation := reservationOf(t, manifests)
	perVM := reservation.DeepCopy()
	own := podtemplate.OwnRequests()
	perVM.Add(*own.Memory())
	quota := perVM.DeepCopy()
	for range n - 1 {
		quota.Add(perVM)
	}
	// Less than one more VM's worth of slack.
	quota.Add(apiresource.MustParse("1Gi"))
	t.Logf("reservation %s a VM, quota requests.memory %s for %d VMs", reservation.String(), quota.String(), n)
	_, err := e.kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "vms"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsMemory: quota}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, []byte(manifests), "apply", "-f", "-")
	waitPaired(t, ns, "testvm", n, settle)
	eventually(t, settle, fmt.Sprintf("%d launcher Pods", n), func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubevirtv1.AppLabel + "=virt-launcher"})
		if err != nil {
			return false, "", err
		}
		var names []string
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				names = append(names, p.Name+"@"+p.Spec.NodeName)
			}
		}
		slices.Sort(names)
		return len(names) == n, strings.Join(names, " "), nil
	})
	checkResized(t, ns)
	q, err := e.kube.CoreV1().ResourceQuotas(ns).Get(t.Context(), "vms", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := q.Status.Used[corev1.ResourceRequestsMemory]
	t.Logf("quota used %s of %s", used.String(), quota.String())
}

// reservationOf reads the reservation scaffold wrote into manifests.
func reservationOf(t *testing.T, manifests string) apiresource.Quantity {
	t.Helper()
	for line := range strings.SplitSeq(manifests, "\n") {
		_, value, ok := strings.Cut(line, contract.AnnotationReservation+": ")
		if !ok {
			continue
		}
		list, err := parseResources(value)
		if err != nil {
			t.Fatal(err)
		}
		return *list.Memory()
	}
	t.Fatalf("no %s in the manifests:\n%s", contract.AnnotationReservation, manifests)
	return apiresource.Quantity{}
}

func parseResources(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for item := range strings.SplitSeq(strings.Trim(s, `"' `), ",") {
		name, value, _ := strings.Cut(item, "=")
		q, err := apiresource.ParseQuantity(value)
		if err != nil {
			return nil, err
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// TestReservationRequests: counted in the audit log from its start until
// its VM is ready, an agent of a pinned template makes 4 requests (its
// store's GET, its VM's watch and create, an Event), 5 with its
// reservation's resize. A reserving agent makes at most three requests
// more than one that does not, and per kind of request: one list of the VM's
// launcher Pods and the launcher Pod's nomination where it waits for the
// room, and its own Pod's resize (see handOver); where the launcher Pod
// fits beside the room, the resize alone. Its launcher Pod never preempts
// (scaffold's launcher class), so the agent does not watch it: any other
// kind of request on Pods than those three it makes no more often than an
// agent that does not reserve.
func TestReservationRequests(t *testing.T) {
	const replicas = 3
	counts := map[bool][]int{}
	kinds := map[bool][]map[string]int{}
	for _, reserve := range []bool{false, true} {
		ns := namespace(t)
		createPrototype(t, ns, "testvm.yaml")
		deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", fmt.Sprint(replicas), fmt.Sprintf("--reserve=%v", reserve))
		pairs := waitPaired(t, ns, "testvm", replicas, settle)
		perPod := agentRequestsByPod(t, ns)
		resizes := 0
		for pod := range pairs {
			counts[reserve] = append(counts[reserve], requestTotal(perPod[pod]))
			kinds[reserve] = append(kinds[reserve], perPod[pod])
			resizes += perPod[pod][resizeKind]
		}
		slices.Sort(counts[reserve])
		t.Logf("--reserve=%v: requests per agent until its VM was ready %v, resizes %d; by kind %v", reserve, counts[reserve], resizes, kinds[reserve])
		if want := map[bool]int{false: 0, true: replicas}[reserve]; resizes != want {
			t.Errorf("--reserve=%v: %d resizes, want %d", reserve, resizes, want)
		}
		if slices.Min(counts[reserve]) == 0 {
			t.Errorf("--reserve=%v: an agent with no request in the audit log: its count is broken", reserve)
		}
	}
	if most, least := slices.Max(counts[true]), slices.Min(counts[false]); most > least+3 {
		t.Errorf("a reserving agent made %d requests, one that does not as few as %d: more than three requests more", most, least)
	}
	// A pinned agent reads its revision store once, never the prototype,
	// and watches its VM and, for KubeVirt's evacuation mark, its VMI:
	// 5 requests to a ready VM, 6 with the resize, and the list of
	// launcher Pods and the nomination more where it hands the room over.
	// Each of those it makes: a count that misses one is broken.
	for reserve, perAgent := range kinds {
		for _, k := range perAgent {
			budget := 5
			made := map[string]int{"get vmrevisionstores": 1, "watch virtualmachines": 1, "watch virtualmachineinstances": 1, "create virtualmachines": 1, "create events": 1}
			if reserve {
				budget = 6 + k["list pods"] + k["patch pods/status"]
				made[resizeKind] = 1
			}
			if k["get vmrevisionstores"] != 1 || k["get virtualmachines"] != 0 || requestTotal(k) > budget {
				t.Errorf("--reserve=%v: an agent's requests %v; want one GET of its store, none of a VM, %d in all at most", reserve, k, budget)
			}
			for kind, n := range made {
				if k[kind] < n {
					t.Errorf("--reserve=%v: an agent's requests %v, without %q; want its store's GET, its VM's watch and create, its VMI's watch, an Event, and a resize where it reserves", reserve, k, kind)
				}
			}
		}
	}
	handover := map[string]int{"list pods": 1, "patch pods/status": 1, resizeKind: 1}
	for _, reserving := range kinds[true] {
		for kind, n := range reserving {
			if !strings.HasSuffix(strings.SplitN(kind, "/", 2)[0], " pods") {
				continue
			}
			most, ok := handover[kind]
			if !ok {
				for _, plain := range kinds[false] {
					most = max(most, plain[kind])
				}
			}
			if n > most {
				t.Errorf("a reserving agent made %d requests %q, want at most %d: %v", n, kind, most, reserving)
			}
		}
	}
}

// requestTotal counts the requests of all kinds.
func requestTotal(kinds map[string]int) int {
	n := 0
	for _, c := range kinds {
		n += c
	}
	return n
}

// resizeKind is the kind of request of a resize (see agentRequestsByPod).
const resizeKind = "patch pods/resize"

// agentRequestsByPod counts the requests of ns's vmctl-testvm agents in the
// audit log, by the Pod whose token made them and by kind: "verb
// resource", or "verb resource/subresource".
func agentRequestsByPod(t testing.TB, ns string) map[string]map[string]int {
	t.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	perPod := map[string]map[string]int{}
	for _, ev := range events {
		if ev.User.Username != "system:serviceaccount:"+ns+":vmctl-testvm" {
			continue
		}
		kind := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			kind += "/" + ev.ObjectRef.Subresource
		}
		if perPod[ev.Pod()] == nil {
			perPod[ev.Pod()] = map[string]int{}
		}
		perPod[ev.Pod()][kind]++
	}
	return perPod
}
