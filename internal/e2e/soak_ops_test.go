//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// soakOp is one kind of operation: weight is its share of the random
// draws, can whether it applies now, run does it and says what it did.
type soakOp struct {
	name   string
	weight int
	can    func(*soak) bool
	run    func(*soak) (string, error)
	// slow marks kinds that take 10 to 60 s (a node's Pods wait 40 s for
	// the pod garbage collector; after an API server restart VM creates are
	// refused for about 15 s, see docs/operations.md): a short run draws them only in
	// its first round.
	slow bool
}

// soakOps are the kinds of operation, in the order the soak first runs
// each once. Weights keep the slow ones (control-plane restarts, drains,
// node removal: 5 to 60 s each) rare next to the quick ones (1 to 3 s).
func soakOps() []soakOp {
	always := func(*soak) bool { return true }
	hasPods := func(s *soak) bool { return len(s.obs.runningPods("")) > 0 }
	return []soakOp{
		{"scale-deployment", 10, always, (*soak).scaleDeployment, false},
		{"scale-statefulset", 8, always, (*soak).scaleStatefulSet, false},
		{"add-node", 3, func(s *soak) bool { return len(s.nodes) < soakMaxNodes }, (*soak).opAddNode, false},
		{"delete-pod", 6, hasPods, (*soak).deletePod, false},
		{"force-delete-pod", 4, hasPods, (*soak).forceDeletePod, false},
		{"orphan-delete-pod", 3, hasPods, (*soak).orphanDeletePod, false},
		{"sigkill-agent", 6, hasPods, (*soak).sigkillAgent, false},
		{"sigstop-agent", 4, hasPods, (*soak).sigstopAgent, false},
		{"delete-vm", 6, hasPods, (*soak).deleteVM, false},
		{"edit-vm", 6, hasPods, (*soak).editVM, false},
		{"collide", 2, always, (*soak).collide, false},
		{"compact-etcd", 3, always, (*soak).compactEtcd, false},
		{"restart-controller-manager", 2, always, (*soak).restartControllerManager, false},
		{"restart-kubevirt", 1, always, (*soak).restartKubeVirt, true},
		{"drain-node", 2, hasPods, (*soak).drainNode, false},
		{"edit-prototype", 2, always, (*soak).editPrototype, false},
		{"rollout-restart", 2, always, (*soak).rolloutRestart, false},
		{"rollout-undo", 2, always, (*soak).rolloutUndo, false},
		{"recreate-prototype", 1, always, (*soak).recreatePrototype, true},
		{"remove-node", 1, func(s *soak) bool { return len(s.nodes) > 1 }, (*soak).removeNode, true},
		{"restart-apiserver", 1, always, (*soak).restartAPIServer, true},
	}
}

// pickPod picks a running agent Pod, the i-th by name.
func (s *soak) pickPod() *corev1.Pod {
	pods := s.obs.runningPods("")
	return pods[s.rng.IntN(len(pods))]
}

// pickProto picks one of the three prototypes.
func (s *soak) pickProto() string {
	return []string{soakDeployProto, soakSTSProto, soakDSProto}[s.rng.IntN(3)]
}

func (s *soak) scale(proto, kind string) (string, error) {
	from := s.replicas[proto]
	to := 1 + s.rng.IntN(soakMaxReplicas)
	if to == from {
		to = from%soakMaxReplicas + 1
	}
	name := scaffold.DefaultName(proto)
	if _, err := soakKubectl(s.ctx, "scale", "-n", s.ns, kind+"/"+name, fmt.Sprintf("--replicas=%d", to)); err != nil {
		return "", err
	}
	s.replicas[proto] = to
	return fmt.Sprintf("%s/%s %d -> %d", kind, name, from, to), nil
}

func (s *soak) scaleDeployment() (string, error) { return s.scale(soakDeployProto, "deployment") }

func (s *soak) scaleStatefulSet() (string, error) { return s.scale(soakSTSProto, "statefulset") }

func (s *soak) opAddNode() (string, error) {
	name, err := s.addNode()
	return name, err
}

// removeNode deletes one of the soak's nodes, as when a machine is gone for
// good: the pod garbage collector deletes its Pods 40 s later, and their
// VMs go with them.
func (s *soak) removeNode() (string, error) {
	i := s.rng.IntN(len(s.nodes))
	name := s.nodes[i]
	if _, err := soakKubectl(s.ctx, "delete", "node", name); err != nil {
		return name, err
	}
	s.nodes = append(s.nodes[:i:i], s.nodes[i+1:]...)
	return name, nil
}

// drainNode drains a node that runs agents with kubectl drain, as for
// maintenance, then uncordons it.
func (s *soak) drainNode() (string, error) {
	nodes := map[string]bool{}
	for _, p := range s.obs.runningPods("") {
		nodes[p.Spec.NodeName] = true
	}
	names := sortedKeys(nodes)
	node := names[s.rng.IntN(len(names))]
	start := time.Now()
	_, err := soakKubectl(s.ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2m")
	took := time.Since(start)
	if _, uerr := soakKubectl(s.ctx, "uncordon", node); err == nil {
		err = uerr
	}
	return fmt.Sprintf("%s drained in %v", node, took.Round(100*time.Millisecond)), err
}

func (s *soak) deletePod() (string, error) {
	p := s.pickPod()
	if _, err := soakKubectl(s.ctx, "delete", "pod", "-n", s.ns, p.Name, "--wait=false"); err != nil {
		return p.Name, err
	}
	return p.Name, s.waitSeenDeleted(p)
}

func (s *soak) forceDeletePod() (string, error) {
	p := s.pickPod()
	if _, err := soakKubectl(s.ctx, "delete", "pod", "-n", s.ns, p.Name, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return p.Name, err
	}
	return p.Name, s.waitSeenDeleted(p)
}

// waitSeenDeleted waits until the soak's Pod informer shows p terminating
// or gone. Settled must mean settled after the deletion: an informer a
// moment behind still shows p with its VM, all paired, and a StatefulSet
// Pod made again under p's name would then start after the check.
func (s *soak) waitSeenDeleted(p *corev1.Pod) error {
	return s.obs.waitFor(s.ctx, soakSettleMax, "Pod "+p.Name+" seen deleted", func() (bool, string) {
		obj, ok, _ := s.obs.pods.GetByKey(s.ns + "/" + p.Name)
		if !ok {
			return true, ""
		}
		cur := obj.(*corev1.Pod)
		return cur.UID != p.UID || cur.DeletionTimestamp != nil, "still there"
	})
}

// orphanDeletePod deletes a Pod with --cascade=orphan: the garbage
// collector then takes the Pod's ownerReference off its VM instead of
// deleting it. Graceful, the agent deletes its VM itself on SIGTERM;
// forced, the VM is left with neither Pod nor owner, for kubectl vmctl gc.
func (s *soak) orphanDeletePod() (string, error) {
	p := s.pickPod()
	args := []string{"delete", "pod", "-n", s.ns, p.Name, "--cascade=orphan", "--wait=false"}
	what := p.Name + " graceful"
	if s.rng.IntN(2) == 0 {
		args = append(args, "--grace-period=0", "--force")
		what = p.Name + " forced"
	}
	if _, err := soakKubectl(s.ctx, args...); err != nil {
		return what, err
	}
	return what, s.waitSeenDeleted(p)
}

// sigkillAgent kills an agent process; the kubelet double starts it again
// in the same Pod, and it adopts its VM.
func (s *soak) sigkillAgent() (string, error) {
	p := s.pickPod()
	before := restarts(p)
	if err := e.kubelet.Signal(s.ns, p.Name, syscall.SIGKILL); err != nil {
		return p.Name, err
	}
	// Settled must mean settled after the restart, not before it.
	err := s.obs.waitFor(s.ctx, soakSettleMax, "the killed agent restarted", func() (bool, string) {
		obj, ok, _ := s.obs.pods.GetByKey(s.ns + "/" + p.Name)
		if !ok {
			return true, "" // deleted meanwhile: nothing to restart
		}
		n := restarts(obj.(*corev1.Pod))
		return n > before, fmt.Sprintf("restarts %d", n)
	})
	return p.Name, err
}

func restarts(p *corev1.Pod) int32 {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// sigstopAgent freezes an agent for 1 to 5 s (its readiness probe fails
// meanwhile), half the time deleting its VM while it is frozen, then lets
// it go on: it must see what it missed.
func (s *soak) sigstopAgent() (string, error) {
	p := s.pickPod()
	frozen := time.Duration(1+s.rng.IntN(5)) * time.Second
	what := fmt.Sprintf("%s for %v", p.Name, frozen)
	if err := e.kubelet.Signal(s.ns, p.Name, syscall.SIGSTOP); err != nil {
		return what, err
	}
	var err error
	if s.rng.IntN(2) == 0 {
		what += ", its VM deleted meanwhile"
		err = s.deleteVMOf(p)
	}
	time.Sleep(frozen) // the freeze itself
	if cerr := e.kubelet.Signal(s.ns, p.Name, syscall.SIGCONT); err == nil {
		err = cerr
	}
	return what, err
}

// deleteVMOf deletes p's VM by hand, telling the observer first.
func (s *soak) deleteVMOf(p *corev1.Pod) error {
	vm := s.vmOf(p)
	if vm == nil {
		return fmt.Errorf("Pod %s has no VM to delete", p.Name)
	}
	s.obs.deletedByHand(p.UID)
	_, err := soakKubectl(s.ctx, "delete", "vm", "-n", s.ns, vm.Name, "--wait=false")
	return err
}

// vmOf is p's VM as the informer has it, or nil.
func (s *soak) vmOf(p *corev1.Pod) *kubevirtv1.VirtualMachine {
	for _, vm := range s.obs.derivedVMs() {
		if vm.Annotations[contract.AnnotationPodUID] == string(p.UID) {
			return vm
		}
	}
	return nil
}

func (s *soak) deleteVM() (string, error) {
	p := s.pickPod()
	return p.Name, s.deleteVMOf(p)
}

// editVM changes a derived VM's "app" label by hand: diff must report it,
// and nothing may undo it.
func (s *soak) editVM() (string, error) {
	p := s.pickPod()
	vm := s.vmOf(p)
	if vm == nil {
		return p.Name, fmt.Errorf("Pod %s has no VM to edit", p.Name)
	}
	value := fmt.Sprintf("hand-%d", len(s.log)+1)
	if _, err := soakKubectl(s.ctx, "label", "vm", "-n", s.ns, vm.Name, "app="+value, "--overwrite"); err != nil {
		return vm.Name, err
	}
	s.edits[vm.UID] = value
	return vm.Name + " app=" + value, nil
}

// editPrototype changes a prototype's VMI template labels. No VM follows
// until a rollout: the templates pin the revision they were rolled out to.
func (s *soak) editPrototype() (string, error) {
	proto := s.pickProto()
	s.rev++
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{"soak-rev":"%d"}}}}}`, s.rev)
	if _, err := soakKubectl(s.ctx, "patch", "vm", "-n", s.ns, proto, "--type=merge", "-p", patch); err != nil {
		return proto, err
	}
	return fmt.Sprintf("%s soak-rev=%d", proto, s.rev), nil
}

// rolloutRestart rolls a prototype out to its workload with kubectl vmctl
// rollout restart: unchanged if its template pins the prototype as it is.
func (s *soak) rolloutRestart() (string, error) {
	proto := s.pickProto()
	out, stderr, code, err := soakCommand(s.ctx, e.binary, "rollout", "restart", proto, "-n", s.ns)
	if err == nil && code != 0 {
		err = fmt.Errorf("kubectl vmctl rollout restart: exit %d: %s", code, stderr)
	}
	return proto + ": " + trimOutput(out), err
}

// rolloutUndo brings a workload's previous template back with kubectl
// rollout undo, and with it the VM revision that template pins; with no
// earlier template to go back to, it rolls the prototype out instead.
func (s *soak) rolloutUndo() (string, error) {
	proto := s.pickProto()
	kind := map[string]string{soakDeployProto: "deployment", soakSTSProto: "statefulset", soakDSProto: "daemonset"}[proto]
	workload := kind + "/" + scaffold.DefaultName(proto)
	history, err := soakKubectl(s.ctx, "rollout", "history", "-n", s.ns, workload)
	if err != nil {
		return workload, err
	}
	// The header, the column names, and a line per revision.
	if revisions := len(strings.Split(strings.TrimSpace(history), "\n")) - 2; revisions < 2 {
		what, err := s.rolloutRestart()
		return workload + " has no earlier template; instead " + what, err
	}
	out, err := soakKubectl(s.ctx, "rollout", "undo", "-n", s.ns, workload)
	return workload + ": " + trimOutput(out), err
}

// recreatePrototype deletes a prototype and makes it again from what it
// was; for the Deployment's, an agent starts meanwhile, without it.
func (s *soak) recreatePrototype() (string, error) {
	proto := s.pickProto()
	vms := e.virt.KubevirtV1().VirtualMachines(s.ns)
	old, err := vms.Get(s.ctx, proto, metav1.GetOptions{})
	if err != nil {
		return proto, err
	}
	if _, err := soakKubectl(s.ctx, "delete", "vm", "-n", s.ns, proto, "--wait=true"); err != nil {
		return proto, err
	}
	what := proto
	if proto == soakDeployProto && s.replicas[proto] < soakMaxReplicas {
		what, err = s.scale(proto, "deployment")
		if err != nil {
			return what, err
		}
		what = proto + ", meanwhile " + what
		// The new agents start and find no prototype.
		err := s.obs.waitFor(s.ctx, soakSettleMax, "the new agents to start", func() (bool, string) {
			pods := s.obs.runningPods(scaffold.DefaultName(proto))
			started := 0
			for _, p := range pods {
				if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
					started++
				}
			}
			return started == s.replicas[proto], fmt.Sprintf("%d of %d started", started, s.replicas[proto])
		})
		if err != nil {
			return what, err
		}
	}
	again := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Labels: old.Labels, Annotations: withoutKubeVirtAnnotations(old.Annotations)},
		Spec:       old.Spec,
	}
	_, err = vms.Create(s.ctx, again, metav1.CreateOptions{})
	return what, err
}

func withoutKubeVirtAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		out[k] = v
	}
	for _, k := range kubeVirtAnnotations {
		delete(out, k)
	}
	return out
}

// collide makes a hand-made VM with a name vmctl derives. While the
// StatefulSet has room, for its next Pod: the soak scales up, the agent
// must refuse the VM (a Warning Event) and leave it alone, then the soak
// deletes it, as the Event says to, and the agent makes its own. Else, for
// a Deployment Pod name no Pod has: a VM nobody may touch, checked to the end.
func (s *soak) collide() (string, error) {
	if s.replicas[soakSTSProto] < soakMaxReplicas {
		return s.collideNextStatefulSetPod()
	}
	return s.collideFormerPod(), nil
}

// makeHandmade creates a hand-made VM called name, a copy of proto
// under other labels, and records it.
func (s *soak) makeHandmade(name, proto string) (*kubevirtv1.VirtualMachine, error) {
	p, err := e.virt.KubevirtV1().VirtualMachines(s.ns).Get(s.ctx, proto, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "hand-made"},
			Annotations: map[string]string{"soak.vmctl.test/note": "made by hand; vmctl must not touch it"}},
		Spec: *p.Spec.DeepCopy(),
	}
	return e.virt.KubevirtV1().VirtualMachines(s.ns).Create(s.ctx, vm, metav1.CreateOptions{})
}

func (s *soak) collideNextStatefulSetPod() (string, error) {
	ordinal := s.replicas[soakSTSProto]
	pod := fmt.Sprintf("%s-%d", scaffold.DefaultName(soakSTSProto), ordinal)
	name := shortVMName(soakSTSProto, pod)
	made, err := s.makeHandmade(name, soakSTSProto)
	if err != nil {
		return name, err
	}
	s.handmade[name] = made
	what := "VM " + name + " for the next StatefulSet Pod " + pod
	if _, err := soakKubectl(s.ctx, "scale", "-n", s.ns, "statefulset/"+scaffold.DefaultName(soakSTSProto), fmt.Sprintf("--replicas=%d", ordinal+1)); err != nil {
		return what, err
	}
	s.replicas[soakSTSProto] = ordinal + 1
	if err := s.waitRefused(pod, name); err != nil {
		return what, err
	}
	if err := s.checkHandmade(); err != nil {
		return what, err
	}
	delete(s.handmade, name)
	if _, err := soakKubectl(s.ctx, "delete", "vm", "-n", s.ns, name, "--wait=false"); err != nil {
		return what, err
	}
	return what + ": refused, then deleted by hand", nil
}

// waitRefused waits for the Warning Event on pod that says the agent will
// not touch VM name.
func (s *soak) waitRefused(pod, name string) error {
	selector := fields.Set{"involvedObject.name": pod, "type": corev1.EventTypeWarning}.AsSelector()
	lw := cache.NewListWatchFromClient(e.kube.CoreV1().RESTClient(), "events", s.ns, selector)
	ctx, cancel := context.WithTimeout(s.ctx, soakSettleMax)
	defer cancel()
	var last string
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Event{}, nil, func(ev watch.Event) (bool, error) {
		e, ok := ev.Object.(*corev1.Event)
		if !ok {
			return false, nil
		}
		last = e.Message
		return strings.Contains(e.Message, name) && strings.Contains(e.Message, "not made by vmctl"), nil
	})
	if err != nil {
		return fmt.Errorf("a Warning Event on Pod %s refusing VM %s: %w; last seen: %q", pod, name, err, last)
	}
	return nil
}

// collideFormerPod makes a hand-made VM with the name vmctl would derive
// for a Deployment Pod of a made-up name, of the shape a ReplicaSet gives,
// that no Pod has: gc and the agents must leave it alone.
func (s *soak) collideFormerPod() string {
	pod := fmt.Sprintf("%s-5f7c9d8b4-h%04d", scaffold.DefaultName(soakDeployProto), s.rng.IntN(10000))
	name := shortVMName(soakDeployProto, pod)
	made, err := s.makeHandmade(name, soakDeployProto)
	if err != nil {
		s.t.Fatalf("make hand-made VM %s: %v", name, err)
	}
	s.handmade[name] = made
	return "VM " + name + " for a Pod " + pod + " that does not exist"
}

// compactEtcd compacts etcd's history up to its current revision: every
// watch from an older resourceVersion that the API server's watch cache
// cannot serve gets 410 Gone. Every other time it also restarts etcd
// around the compaction, so every watch cache lists again and every running
// watch ends and gets 410 when opened again from its last version.
func (s *soak) compactEtcd() (string, error) {
	if s.rng.IntN(2) == 0 {
		rev, err := e.cluster.RestartEtcdCompacted(s.ctx)
		return fmt.Sprintf("etcd restarted, compacted to revision %d", rev), err
	}
	rev, err := e.cluster.CompactEtcd(s.ctx)
	return fmt.Sprintf("at revision %d", rev), err
}

func (s *soak) restartControllerManager() (string, error) {
	sig := []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM}[s.rng.IntN(2)]
	return sig.String(), e.cluster.RestartControllerManager(s.ctx, sig)
}

// restartAPIServer stops kube-apiserver (a crash or a graceful stop) for 1
// to 5 s and starts it again.
func (s *soak) restartAPIServer() (string, error) {
	sig := []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM}[s.rng.IntN(2)]
	down := time.Duration(1+s.rng.IntN(5)) * time.Second
	return fmt.Sprintf("%v, down %v", sig, down), e.cluster.RestartAPIServer(s.ctx, sig, down, nil)
}

// restartKubeVirt kills virt-controller or virt-api; the harness starts it
// again, as a Deployment would (virt-controller must then wait for its
// Lease to expire).
func (s *soak) restartKubeVirt() (string, error) {
	name := []string{kvharness.VirtController, kvharness.VirtAPI}[s.rng.IntN(2)]
	before := e.kv.Pids()[name]
	if before == 0 {
		return name, fmt.Errorf("%s is not running", name)
	}
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		return name, err
	}
	// The harness has no event for a process start: poll its pid.
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		now := e.kv.Pids()[name]
		return now != 0 && now != before, nil
	})
	if err != nil {
		return name, fmt.Errorf("%s did not run again: %w", name, err)
	}
	if name != kvharness.VirtAPI {
		return name, nil
	}
	// Until virt-api serves, its webhooks fail closed: every VM write and
	// every launcher Pod eviction is refused. Wait until a VM passes them
	// (a server-side dry run), so the next operation meets a KubeVirt that
	// is up, as a Deployment's readiness probe would hold back traffic.
	proto, err := e.virt.KubevirtV1().VirtualMachines(s.ns).Get(s.ctx, soakDeployProto, metav1.GetOptions{})
	if err != nil {
		return name, err
	}
	probe := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "soak-probe"}, Spec: proto.Spec}
	var last error
	err = wait.PollUntilContextTimeout(s.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = e.virt.KubevirtV1().VirtualMachines(s.ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return name, fmt.Errorf("virt-api's webhooks not answering after its restart: %w (last: %w)", err, last)
	}
	return name, nil
}

// trimOutput keeps a command's output to one short line for the log.
func trimOutput(out string) string {
	out = strings.Join(strings.Fields(out), " ")
	if len(out) > 200 {
		out = out[:200] + "..."
	}
	return out
}
