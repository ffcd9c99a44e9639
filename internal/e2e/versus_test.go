//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// versusTimeout bounds each wait of BenchmarkVersusPool.
const versusTimeout = 20 * time.Minute

// BenchmarkVersusPool runs the same VM spec (testdata/testvm.yaml) on the
// same cluster and nodes two ways, back to back in one run: as KubeVirt's
// VirtualMachinePool (pool.kubevirt.io/v1beta1, run by KubeVirt's real
// virt-controller) and as a scaffolded Deployment of vmctl agents. Each
// case prints both figures and their ratio (vmctl / pool):
//
//   - scale 0 → VMCTL_VERSUS_VMS (default 100) → 0: the time to the VMs
//     created, to their VMIs Running and Ready, and to all gone; API
//     requests per VM by component (the audit log names each); Pods per
//     VM; the agents' RssAnon against virt-controller's growth;
//   - a template change rolled out over VMCTL_VERSUS_ROLLOUT (default 20)
//     VMs with maxUnavailable 1 on both, then rolled back: time, and the
//     fewest ready VMs meanwhile; what the pool cannot do is tried and its
//     answer printed;
//   - a kube-apiserver restart (SIGTERM, 10 s down) under VMCTL_VERSUS_VMS
//     VMs, each fleet in turn: the requests in the minute after, by
//     component;
//   - a drain under a maxUnavailable 1 PodDisruptionBudget, on nodes of 8
//     CPUs and 32 GiB;
//   - five VMs at once where four fit: what each does about the fifth;
//   - a DNS name for each of three VMs, through a headless Service.
//
// Run it with `make bench-versus`; each case is a sub-benchmark
// (-bench 'VersusPool/drain' runs one), and the table at the end has the
// cases that ran.
func BenchmarkVersusPool(b *testing.B) {
	n := envInt(b, "VMCTL_VERSUS_VMS", 100)
	m := envInt(b, "VMCTL_VERSUS_ROLLOUT", 20)
	addFleetNodes(b)
	t := newVersusTable()
	for _, c := range []struct {
		name string
		run  func(*testing.B, *versusTable)
	}{
		{"scale", func(b *testing.B, t *versusTable) { versusScale(b, t, n) }},
		{"rollout", func(b *testing.B, t *versusTable) { versusRollout(b, t, m) }},
		{"restart", func(b *testing.B, t *versusTable) { versusRestart(b, t, n) }},
		{"drain", versusDrain},
		{"noroom", versusNoRoom},
		{"dns", versusDNS},
	} {
		b.Run(c.name, func(b *testing.B) { c.run(b, t) })
	}
	fmt.Print(t)
}

// contender is one way of running a fleet of VMs in a namespace of its own.
type contender struct {
	name  string
	ns    string
	watch *nsWatch
	// workload is what `kubectl scale` scales.
	workload string
	// roll changes the VM template's revAnnotation to rev ("" removes it)
	// and starts rolling the change out.
	roll func(b testing.TB, rev string)
	// agents tells the vmctl contender.
	agents bool
}

func (c *contender) scale(b testing.TB, n int) {
	kubectl(b, nil, "scale", "-n", c.ns, c.workload, fmt.Sprintf("--replicas=%d", n))
}

// revPatch is a merge patch that sets the revAnnotation of a VM template at
// path (its parents' names) to rev, or removes it.
func revPatch(rev string, path ...string) string {
	var value any
	if rev != "" {
		value = rev
	}
	var obj any = map[string]any{"metadata": map[string]any{"annotations": map[string]any{revAnnotation: value}}}
	for i := len(path) - 1; i >= 0; i-- {
		obj = map[string]any{path[i]: obj}
	}
	out, _ := json.Marshal(obj)
	return string(out)
}

// newPool makes a VirtualMachinePool of 0 VMs of testvm.yaml's spec, changed
// by change, with maxUnavailable 1.
func newPool(b testing.TB, change func(*kubevirtv1.VirtualMachine)) *contender {
	b.Helper()
	ns := namespace(b)
	vm := readPrototype(b, "testvm.yaml", change)
	spec := vm.Spec.DeepCopy()
	spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	labels := map[string]string{"e2e.vmctl.kubevirt.io/pool": vm.Name}
	pool := &poolv1.VirtualMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name},
		Spec: poolv1.VirtualMachinePoolSpec{
			Replicas:               ptr.To[int32](0),
			Selector:               &metav1.LabelSelector{MatchLabels: labels},
			VirtualMachineTemplate: &poolv1.VirtualMachineTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: *spec},
			MaxUnavailable:         ptr.To(intstr.FromInt32(1)),
		},
	}
	if _, err := e.virt.PoolV1beta1().VirtualMachinePools(ns).Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
		b.Fatalf("create the VirtualMachinePool: %v", err)
	}
	return &contender{
		name: "VirtualMachinePool", ns: ns, watch: watchNamespace(b, ns, ""),
		workload: "virtualmachinepools.pool.kubevirt.io/" + vm.Name,
		roll: func(b testing.TB, rev string) {
			kubectl(b, nil, "patch", "-n", ns, "virtualmachinepools.pool.kubevirt.io", vm.Name, "--type=merge",
				"-p", revPatch(rev, "spec", "virtualMachineTemplate", "spec", "template"))
		},
	}
}

// newAgents makes a scaffolded Deployment of 0 agents of a testvm.yaml
// prototype changed by change, with maxUnavailable 1 and no surge.
func newAgents(b testing.TB, change func(*kubevirtv1.VirtualMachine), flags ...string) *contender {
	b.Helper()
	ns := namespace(b)
	proto := createPrototypeWith(b, ns, "testvm.yaml", change)
	deploy(b, ns, scaffold.KindDeployment, proto.Name, append([]string{"--replicas", "0"}, flags...)...)
	c := &contender{
		name: "vmctl Deployment", ns: ns, watch: watchNamespace(b, ns, proto.Name), agents: true,
		workload: "deployment/" + scaffold.DefaultName(proto.Name),
		roll: func(b testing.TB, rev string) {
			kubectl(b, nil, "patch", "-n", ns, "virtualmachine.kubevirt.io", proto.Name, "--type=merge",
				"-p", revPatch(rev, "spec", "template"))
			vmctl(b, "rollout", "restart", proto.Name, "-n", ns)
		},
	}
	c.strategy(b, 1, 0)
	return c
}

// strategy sets the agents' Deployment's rolling update.
func (c *contender) strategy(b testing.TB, maxUnavailable, maxSurge int) {
	kubectl(b, nil, "patch", "-n", c.ns, c.workload, "--type=merge", "-p", fmt.Sprintf(
		`{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":%d,"maxSurge":%d}}}}`, maxUnavailable, maxSurge))
}

// scaleSettled scales c to n and waits until n VMIs are Running and Ready
// (or, at 0, until nothing is left).
func (c *contender) scaleSettled(b testing.TB, n int) {
	b.Helper()
	c.scale(b, n)
	c.watch.until(b, time.Now(), versusTimeout, fmt.Sprintf("%s at %d", c.name, n), func(s nsNow) bool {
		if n == 0 {
			return s.empty()
		}
		return s.vms == n && s.vmis == n && s.vmisReady == n
	})
}

// versusScale: 0 → n → 0, a pool first, then agents.
func versusScale(b *testing.B, t *versusTable, n int) {
	type figures struct {
		created, ready, gone         time.Duration
		up, down                     componentRequests
		upThrottled, downThrottled   componentRequests
		podsPerVM                    float64
		controllerGrowth, agentsAnon int // KiB
		cpuUp, cpuDown               clusterCPU
	}
	var got [2]figures
	// A real kubelet probes each agent every periodSeconds as scaffolded;
	// the double's quicker default would count as the agents' CPU.
	e.kubelet.ProbeAsSpecified(true)
	defer e.kubelet.ProbeAsSpecified(false)
	for i, c := range []*contender{newPool(b, nil), newAgents(b, nil)} {
		f := &got[i]
		procs := clusterProcesses()
		_, rss0 := procs.usage(b)
		mark := auditMark(b)
		cpu0 := markCPU(b, procs, 0)
		stopProfile := profileAPIServer(b, fmt.Sprintf("%s-%d-kube-apiserver", profileName(c), n))
		t0 := time.Now()
		c.scale(b, n)
		f.created = c.watch.until(b, t0, versusTimeout, c.name+": VMs created", func(s nsNow) bool { return s.vms >= n })
		f.ready = c.watch.until(b, t0, versusTimeout, c.name+": VMIs Running and Ready", func(s nsNow) bool { return s.vmisReady >= n })
		stopProfile()
		printRamp(b, c.name, c.ns, mark, n, t0)
		// Pods counted once the last agent's launcher Pod is there too.
		c.watch.until(b, t0, versusTimeout, c.name+": Pods Ready", func(s nsNow) bool { return s.podsReady == s.pods })
		f.podsPerVM = float64(c.watch.now().pods) / float64(n)
		f.up, f.upThrottled = requestsIn(b, c.ns, mark)
		_, rss1 := procs.usage(b)
		f.controllerGrowth = rss1["virt-controller"] - rss0["virt-controller"]
		var agentsCPU time.Duration
		if c.agents {
			a := agentProcesses(b, c.ns)
			f.agentsAnon, agentsCPU = a.anonSum, a.cpuSum
		}
		f.cpuUp = cpuSince(b, procs, cpu0, agentsCPU)
		// On a machine this small both fleets keep every core busy
		// through the ramp, so its time follows its CPU.
		fmt.Printf("versus: %s: scale 0 → %d: %.2f of %d cores busy on average, from the scale to now\n",
			c.name, n, f.cpuUp.total().Seconds()/time.Since(t0).Seconds(), runtime.NumCPU())
		for _, who := range []string{"agents", "kube-controller-manager"} {
			if kinds, throttled := requestKinds(b, c.ns, mark, who); len(kinds) > 0 {
				fmt.Printf("versus: %s: scale 0 → %d: %s's requests per VM by verb and resource: %s; of them answered 429: %s\n",
					c.name, n, who, kinds.perVM(n), throttled.perVM(n))
			}
		}
		fmt.Printf("versus: %s: scale 0 → %d: VMs created after %s, VMIs Running and Ready after %s; %.1f Pods per VM; requests per VM: %s; of them answered 429: %s; CPU seconds per VM: %s\n",
			c.name, n, f.created.Round(time.Millisecond), f.ready.Round(time.Millisecond), f.podsPerVM, f.up.perVM(n), f.upThrottled.perVM(n), f.cpuUp.perVM(n))

		mark = auditMark(b)
		cpu1 := markCPU(b, procs, agentsCPU)
		t1 := time.Now()
		c.scale(b, 0)
		f.gone = c.watch.until(b, t1, versusTimeout, c.name+": all gone", nsNow.empty)
		if c.agents {
			writeAgentProfiles(b, c.ns, fmt.Sprintf("agents-%d", n))
		}
		f.down, f.downThrottled = requestsIn(b, c.ns, mark)
		// The agents exit and are reaped: their CPU since cpu1 is in
		// cpuReaped.
		f.cpuDown = cpuSince(b, procs, cpu1, 0)
		for _, who := range []string{"agents", "kube-controller-manager"} {
			if kinds, throttled := requestKinds(b, c.ns, mark, who); len(kinds) > 0 {
				fmt.Printf("versus: %s: scale %d → 0: %s's requests per VM by verb and resource: %s; of them answered 429: %s\n",
					c.name, n, who, kinds.perVM(n), throttled.perVM(n))
			}
		}
		fmt.Printf("versus: %s: scale %d → 0: all VMs, VMIs and Pods gone after %s; requests per VM: %s; of them answered 429: %s; CPU seconds per VM: %s\n",
			c.name, n, f.gone.Round(time.Millisecond), f.down.perVM(n), f.downThrottled.perVM(n), f.cpuDown.perVM(n))
	}
	pool, agents := got[0], got[1]
	scaleCase := fmt.Sprintf("scale 0 → %d → 0", n)
	t.durations(scaleCase, "to VMs created", pool.created, agents.created)
	t.durations(scaleCase, "to VMIs Running and Ready", pool.ready, agents.ready)
	t.durations(scaleCase, "to all gone", pool.gone, agents.gone)
	for _, who := range []string{"agents", "virt-controller", "virt-api", "virt-handler (stand-in)", "kube-controller-manager",
		"kube-scheduler", "kubelets (kwok, agent double)", "kube-apiserver (its own)"} {
		t.numbers(scaleCase, "requests per VM, up and down: "+who, perVM(pool.up[who]+pool.down[who], n), perVM(agents.up[who]+agents.down[who], n), "%.1f")
	}
	t.numbers(scaleCase, "requests per VM, up and down: all", perVM(pool.up.total()+pool.down.total(), n), perVM(agents.up.total()+agents.down.total(), n), "%.1f")
	t.numbers(scaleCase, "… of them answered 429 (API Priority and Fairness), retried", perVM(pool.upThrottled.total()+pool.downThrottled.total(), n),
		perVM(agents.upThrottled.total()+agents.downThrottled.total(), n), "%.1f")
	t.numbers(scaleCase, "Pods per VM", pool.podsPerVM, agents.podsPerVM, "%.0f")
	for _, who := range cpuRows(pool.cpuUp, pool.cpuDown, agents.cpuUp, agents.cpuDown) {
		t.numbers(scaleCase, "CPU seconds per VM, up and down: "+who,
			(pool.cpuUp[who]+pool.cpuDown[who]).Seconds()/float64(n), (agents.cpuUp[who]+agents.cpuDown[who]).Seconds()/float64(n), "%.3f")
	}
	t.numbers(scaleCase, "CPU seconds per VM, up and down: all",
		(pool.cpuUp.total()+pool.cpuDown.total()).Seconds()/float64(n), (agents.cpuUp.total()+agents.cpuDown.total()).Seconds()/float64(n), "%.3f")
	t.numbers(scaleCase, "virt-controller's RSS growth, MiB", float64(pool.controllerGrowth)/1024, float64(agents.controllerGrowth)/1024, "%.0f")
	t.numbers(scaleCase, "agents' RssAnon in all, MiB", 0, float64(agents.agentsAnon)/1024, "%.0f")
}

func perVM(requests, vms int) float64 { return float64(requests) / float64(vms) }

// versusRollout rolls a template change out over m VMs of each, then back.
func versusRollout(b *testing.B, t *versusTable, m int) {
	rolloutCase := fmt.Sprintf("template change, %d VMs, maxUnavailable 1", m)
	type figures struct {
		took, back   time.Duration
		low, lowBack int
	}
	var got [2]figures
	for i, c := range []*contender{newPool(b, nil), newAgents(b, nil)} {
		f := &got[i]
		c.scaleSettled(b, m)
		f.took, f.low = rollTo(b, c, m, "2")
		fmt.Printf("versus: %s: rollout over %d VMs: all updated after %s, fewest ready VMs meanwhile %d\n", c.name, m, f.took.Round(time.Millisecond), f.low)
		if c.agents {
			// What `kubectl rollout undo` does to the VMs: it rolls the
			// Pods back, but a Pod's VM derives from the prototype as it
			// is now.
			kubectl(b, nil, "rollout", "undo", "-n", c.ns, c.workload)
			kubectl(b, nil, "rollout", "status", "-n", c.ns, c.workload, "--timeout=10m")
			c.watch.until(b, time.Now(), versusTimeout, "VMs ready after the undo", func(s nsNow) bool { return s.vmisReady == m && s.vmis == m })
			fmt.Printf("versus: %s: `kubectl rollout undo` of the Deployment: VMIs at the new revision after it: %d of %d\n",
				c.name, c.watch.now().vmisAt["2"], m)
		} else {
			for _, try := range [][]string{
				{"rollout", "undo", "-n", c.ns, c.workload},
				{"rollout", "status", "-n", c.ns, c.workload},
				{"patch", "-n", c.ns, c.workload, "--type=merge", "-p", `{"spec":{"maxSurge":1}}`},
			} {
				out, stderr, code := runCode(b, nil, "kubectl", try...)
				fmt.Printf("versus: %s: `kubectl %s`: exit %d: %s\n", c.name, strings.Join(try, " "), code, strings.TrimSpace(out+stderr))
			}
		}
		f.back, f.lowBack = rollTo(b, c, m, "")
		fmt.Printf("versus: %s: rollback (the template reverted, and rolled out again): %s, fewest ready VMs meanwhile %d\n", c.name, f.back.Round(time.Millisecond), f.lowBack)
		if c.agents {
			c.strategy(b, 0, 1)
			took, low := rollTo(b, c, m, "3")
			fmt.Printf("versus: %s: rollout with maxSurge 1, maxUnavailable 0: %s, fewest ready VMs meanwhile %d\n", c.name, took.Round(time.Millisecond), low)
			t.add(rolloutCase, "with maxSurge 1, maxUnavailable 0 instead: time; fewest ready", "no maxSurge",
				fmt.Sprintf("%s; %d of %d", took.Round(100*time.Millisecond), low, m), "")
		}
		c.scaleSettled(b, 0)
	}
	pool, agents := got[0], got[1]
	t.durations(rolloutCase, "to all updated", pool.took, agents.took)
	t.numbers(rolloutCase, "fewest ready VMs during it", float64(pool.low), float64(agents.low), "%.0f")
	t.durations(rolloutCase, "rollback (revert the template, roll again)", pool.back, agents.back)
}

// rollTo rolls c's m VMs to rev and returns when every VMI was at it and
// Ready, and the fewest ready VMs meanwhile.
func rollTo(b *testing.B, c *contender, m int, rev string) (time.Duration, int) {
	b.Helper()
	c.watch.trackLow()
	t0 := time.Now()
	c.roll(b, rev)
	took := c.watch.until(b, t0, versusTimeout, c.name+": rolled to revision "+rev, func(s nsNow) bool {
		return s.vms == m && s.vmis == m && s.vmisAt[rev] == m
	})
	return took, c.watch.lowest()
}
