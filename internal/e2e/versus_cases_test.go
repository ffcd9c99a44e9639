//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// drainLimit is how long a drain may take before it counts as never done.
const drainLimit = 90 * time.Second

// noRoomGiveUp is how long the no-room case lets a VM fail to start before
// it is given up: the pool's minFailingToStartDuration, the agents'
// --move-after.
const noRoomGiveUp = time.Minute

// noRoomWatch is how long the no-room case watches what each one does.
const noRoomWatch = 150 * time.Second

// versusRestart restarts kube-apiserver under n VMs of a pool, then under n
// VMs of agents, one fleet at a time so that each restart's requests are
// that fleet's, and counts every request in the minute after by component.
func versusRestart(b *testing.B, t *versusTable, n int) {
	restartCase := fmt.Sprintf("kube-apiserver restart (SIGTERM, %s down), %d VMs", apiDown, n)
	type figures struct {
		requests  componentRequests
		restarted bool // virt-controller started again
		again     int  // VMs made again
		onPools   int  // virt-controller's requests on pools and their revisions
	}
	var got [2]figures
	for i, c := range []*contender{newPool(b, nil), newAgents(b, nil)} {
		f := &got[i]
		c.scaleSettled(b, n)
		before := c.watch.now().vmsEver
		controllerPid := e.kv.Pids()["virt-controller"]
		mark := auditMark(b)
		if err := e.cluster.RestartAPIServer(context.Background(), syscall.SIGTERM, apiDown, nil); err != nil {
			b.Fatal(err)
		}
		up := time.Now()
		time.Sleep(time.Until(up.Add(budgetWindow)))
		events, err := e.cluster.ReadAudit()
		if err != nil {
			b.Fatal(err)
		}
		f.requests, _ = tally(events[mark:], c.ns, func(testcluster.AuditEvent) bool { return true })
		// The pool controller's own informers; it shares the VM and VMI
		// informers with the VM controller.
		onPools, _ := tally(events[mark:], c.ns, func(ev testcluster.AuditEvent) bool {
			r := ev.ObjectRef.Resource
			return r == "virtualmachinepools" || r == "controllerrevisions"
		})
		f.onPools = onPools["virt-controller"]
		f.restarted = e.kv.Pids()["virt-controller"] != controllerPid
		c.scaleSettled(b, n)
		f.again = c.watch.now().vmsEver - before
		fmt.Printf("versus: %s: kube-apiserver restart with %d VMs: requests in the %s after, cluster-wide, per VM: %s; virt-controller's on pools and their revisions %d; virt-controller started again (it lost its leader lease): %v; VMs made again: %d\n",
			c.name, n, budgetWindow, f.requests.perVM(n), f.onPools, f.restarted, f.again)
		c.scaleSettled(b, 0)
	}
	pool, agents := got[0], got[1]
	t.numbers(restartCase, "requests in the minute after, per VM", perVM(pool.requests.total(), n), perVM(agents.requests.total(), n), "%.1f")
	for _, who := range []string{"agents", "virt-controller"} {
		t.numbers(restartCase, "… by "+who, perVM(pool.requests[who], n), perVM(agents.requests[who], n), "%.2f")
	}
	t.add(restartCase, "virt-controller started again (lost its leader lease)", fmt.Sprint(pool.restarted), fmt.Sprint(agents.restarted), "")
	t.add(restartCase, "VMs made again", fmt.Sprint(pool.again), fmt.Sprint(agents.again), "")
}

// versusDrain drains a node of 8 CPUs and 32 GiB under 4 VMs of each, one
// after the other, each with a PodDisruptionBudget of maxUnavailable 1: over
// the pool's launcher Pods, and over the agent Pods.
func versusDrain(b *testing.B, t *versusTable) {
	const replicas = 4
	const key = "versus-drain"
	addSizedNodes(b, key, 3)
	drainCase := fmt.Sprintf("drain, %d VMs over 3 nodes, PDB maxUnavailable 1", replicas)
	var cells [2]string
	for i, c := range []*contender{newPool(b, onSized(key, "")), newAgents(b, onSized(key, ""))} {
		selector := map[string]string{"kubevirt.io": "virt-launcher", "app": "testvm"}
		if c.agents {
			selector = map[string]string{contract.LabelName: contract.AppName, contract.LabelInstance: scaffold.DefaultName("testvm")}
		}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "vms"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: selector}}}
		if _, err := e.kube.PolicyV1().PodDisruptionBudgets(c.ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		c.scaleSettled(b, replicas)
		budget := pdbComputed(b, c.ns, "vms")
		node := busiestVMINode(b, c.ns)

		c.watch.trackLow()
		start := time.Now()
		_, stderr, code := runCode(b, nil, "kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
			"--timeout="+drainLimit.String())
		took := time.Since(start)
		uncordon(b, node)
		low := c.watch.lowest()
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		fmt.Printf("versus: %s: the budget said: %s; kubectl drain %s: exit %d after %s, fewest ready VMs meanwhile %d; its last words: %s\n",
			c.name, budget, node, code, took.Round(100*time.Millisecond), low, lines[len(lines)-1])
		if code == 0 {
			cells[i] = fmt.Sprintf("drained in %s; fewest ready %d of %d", took.Round(100*time.Millisecond), low, replicas)
		} else {
			cells[i] = fmt.Sprintf("not drained in %s (exit %d): %s", drainLimit, code, budget)
		}
		c.scaleSettled(b, replicas)
		c.scaleSettled(b, 0)
	}
	t.add(drainCase, "kubectl drain of the busiest node", cells[0], cells[1], "")
}

// versusNoRoom scales to 5 VMs of 12 GiB at once where 4 fit (two nodes of
// 32 GiB), and watches what each one does about the fifth. Each one's way
// of giving up on a VM that cannot start waits noRoomGiveUp (both default
// to 5 minutes): the pool's autohealing, and the agents' --move-after.
func versusNoRoom(b *testing.B, t *versusTable) {
	const replicas, fit = 5, 4
	const key = "versus-noroom"
	addSizedNodes(b, key, 2)
	noRoomCase := fmt.Sprintf("%d VMs of 12 GiB where %d fit", replicas, fit)
	var cells [2]string
	for i, c := range []*contender{newPool(b, onSized(key, "12Gi")), newAgents(b, onSized(key, "12Gi"), "--move-after", noRoomGiveUp.String())} {
		if !c.agents {
			kubectl(b, nil, "patch", "-n", c.ns, c.workload, "--type=merge", "-p",
				fmt.Sprintf(`{"spec":{"autohealing":{"minFailingToStartDuration":%q}}}`, noRoomGiveUp))
		}
		c.scale(b, replicas)
		c.watch.until(b, time.Now(), versusTimeout, c.name+": the VMs that fit ready", func(s nsNow) bool { return s.vmisReady == fit })
		time.Sleep(noRoomWatch)
		s := c.watch.now()
		why := noRoomState(b, c)
		fmt.Printf("versus: %s: %d VMs of 12 GiB on 2 nodes of 32 GiB, after %s: %s; VMs made in all %d; the one without room: %s\n",
			c.name, replicas, noRoomWatch, s, s.vmsEver, why)
		cells[i] = fmt.Sprintf("%d ready; %d VMs made in %s; %s", s.vmisReady, s.vmsEver, noRoomWatch, why)
		c.scaleSettled(b, 0)
	}
	t.add(noRoomCase, "what happens to the fifth", cells[0], cells[1], "")
}

// noRoomState says what the VMs and Pods of c that are not running show.
func noRoomState(b *testing.B, c *contender) string {
	ctx := context.Background()
	var parts []string
	vms, err := e.virt.KubevirtV1().VirtualMachines(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, vm := range vms.Items {
		if c.agents && vm.Name == "testvm" {
			continue // the prototype
		}
		if !vm.Status.Ready {
			parts = append(parts, fmt.Sprintf("VM %s %s", vm.Name, vm.Status.PrintableStatus))
		}
	}
	pods, err := e.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		msg := ""
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				msg, _, _ = strings.Cut(cond.Message, ". ")
			}
		}
		parts = append(parts, fmt.Sprintf("Pod %s Pending: %s", p.Labels["kubevirt.io"]+p.Labels[contract.LabelComponent], msg))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// versusDNS gives each of 3 VMs a DNS name through a headless Service: the
// pool through its VM template's subdomain (KubeVirt names a launcher Pod's
// host after its VMI), vmctl through a StatefulSet. The names are the
// Service's EndpointSlices' hostnames, which cluster DNS serves as
// <hostname>.<service>.<namespace>.svc. Then one VM is deleted (the pool's)
// or its Pod (the StatefulSet's), and the names are read again.
func versusDNS(b *testing.B, t *versusTable) {
	const replicas = 3
	dnsCase := fmt.Sprintf("a DNS name for each of %d VMs (vmctl: a StatefulSet)", replicas)
	pool := newPool(b, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Subdomain = "vms" })
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "vms"}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "testvm"}}}
	if _, err := e.kube.CoreV1().Services(pool.ns).Create(context.Background(), headless, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	ns := namespace(b)
	proto := createPrototype(b, ns, "testvm.yaml")
	deploy(b, ns, scaffold.KindStatefulSet, proto.Name, "--name", "web", "--replicas", "0")
	statefulSet := &contender{name: "vmctl StatefulSet", ns: ns, watch: watchNamespace(b, ns, proto.Name), agents: true, workload: "statefulset/web"}

	var cells [2]string
	for i, run := range []struct {
		c                *contender
		service, deleted string
		delete           func(ctx context.Context) error
	}{
		{pool, "vms", "VM testvm-1", func(ctx context.Context) error {
			return e.virt.KubevirtV1().VirtualMachines(pool.ns).Delete(ctx, "testvm-1", metav1.DeleteOptions{})
		}},
		{statefulSet, "web", "Pod web-1", func(ctx context.Context) error {
			return e.kube.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{})
		}},
	} {
		c := run.c
		c.scaleSettled(b, replicas)
		before := serviceHostnames(b, c.ns, run.service, replicas)
		if err := run.delete(context.Background()); err != nil {
			b.Fatal(err)
		}
		c.watch.until(b, time.Now(), versusTimeout, c.name+": a VM in place of the one deleted", func(s nsNow) bool {
			return s.vmsEver == replicas+1 && s.vmisReady == replicas
		})
		after := serviceHostnames(b, c.ns, run.service, replicas)
		fmt.Printf("versus: %s: the headless Service %s names %v; after %s was deleted, %v\n", c.name, run.service, before, run.deleted, after)
		cells[i] = fmt.Sprintf("%s; after deleting %s: %s", strings.Join(before, ", "), run.deleted, strings.Join(after, ", "))
		c.scaleSettled(b, 0)
	}
	t.add(dnsCase, "hostnames in the Service's EndpointSlices", cells[0], cells[1], "")
}

// serviceHostnames waits until service's EndpointSlices hold want ready
// endpoints with a hostname, and returns the names as DNS serves them.
func serviceHostnames(b *testing.B, ns, service string, want int) []string {
	var names []string
	eventually(b, settle, "Service "+service+"'s EndpointSlices name each VM", func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, "", err
		}
		names = nil
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				if ep.Hostname != nil && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
					names = append(names, *ep.Hostname+"."+service)
				}
			}
		}
		sort.Strings(names)
		return len(names) == want, strings.Join(names, " "), nil
	})
	return names
}

// onSized places a VM on the sized nodes labelled key, with guest memory
// (or testvm.yaml's when "").
func onSized(key, memory string) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) {
		spec := &vm.Spec.Template.Spec
		if memory != "" {
			spec.Domain.Memory.Guest = ptr.To(apiresource.MustParse(memory))
		}
		spec.NodeSelector = map[string]string{sizedKey: key}
		spec.Tolerations = []corev1.Toleration{{Key: sizedKey, Operator: corev1.TolerationOpEqual, Value: key, Effect: corev1.TaintEffectNoSchedule}}
	}
}

// pdbComputed waits until the disruption controller allows a disruption
// or says it cannot compute the budget, and says which.
func pdbComputed(b *testing.B, ns, name string) string {
	var said string
	eventually(b, settle, "PodDisruptionBudget "+name+" computed", func(ctx context.Context) (bool, string, error) {
		pdb, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := pdb.Status
		said = fmt.Sprintf("%d disruptions allowed", s.DisruptionsAllowed)
		failed := false
		for _, c := range s.Conditions {
			if c.Type == policyv1.DisruptionAllowedCondition && c.Status == metav1.ConditionFalse && c.Reason == policyv1.SyncFailedReason {
				said += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
				failed = true
			}
		}
		return s.ObservedGeneration == pdb.Generation && (s.DisruptionsAllowed > 0 || failed), said, nil
	})
	return said
}

// busiestVMINode is the node most of ns's VMIs run on.
func busiestVMINode(b *testing.B, ns string) string {
	vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	count := map[string]int{}
	best := ""
	for _, vmi := range vmis.Items {
		node := vmi.Status.NodeName
		count[node]++
		if best == "" || count[node] > count[best] || count[node] == count[best] && node < best {
			best = node
		}
	}
	return best
}

// versusTable collects the cases' figures, and prints them as a Markdown
// table.
type versusTable struct{ rows [][5]string }

func newVersusTable() *versusTable { return &versusTable{} }

func (t *versusTable) add(what, figure, pool, agents, ratio string) {
	t.rows = append(t.rows, [5]string{what, figure, pool, agents, ratio})
}

func (t *versusTable) durations(what, figure string, pool, agents time.Duration) {
	t.add(what, figure, pool.Round(100*time.Millisecond).String(), agents.Round(100*time.Millisecond).String(), ratio(agents.Seconds(), pool.Seconds()))
}

// numbers adds two figures as format shows them, and the ratio of what it
// shows.
func (t *versusTable) numbers(what, figure string, pool, agents float64, format string) {
	shown := func(v float64) (string, float64) {
		s := fmt.Sprintf(format, v)
		f, _ := strconv.ParseFloat(s, 64)
		return s, f
	}
	p, pv := shown(pool)
	a, av := shown(agents)
	t.add(what, figure, p, a, ratio(av, pv))
}

func ratio(agents, pool float64) string {
	if pool == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", agents/pool)
}

func (t *versusTable) String() string {
	var s strings.Builder
	s.WriteString("| case | figure | VirtualMachinePool | vmctl | vmctl / pool |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range t.rows {
		s.WriteString("| " + strings.Join(r[:], " | ") + " |\n")
	}
	return s.String()
}
