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
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// checkStep waits until the cluster settles after op (begun at began),
// checks every invariant and returns how long it took to settle:
//   - every running agent Pod has exactly one VM, named for it, pinned to
//     its node, owned by it, of the revision the Pod pins, running and
//     ready (and the Pod Ready, on a node that exists), and each workload
//     has the Pods it should;
//   - no derived VM outlives its Pod: those with an ownerReference must be
//     gone by the garbage collector; those without one (orphaned with
//     --cascade=orphan) are exactly what `kubectl vmctl gc` then deletes,
//     and it deletes nothing else;
//   - never two VMs alive at once for one Pod, nor a VM made again for a Pod
//     unless the soak deleted the last (soakObserver, through the whole soak);
//   - every agent Pod holds the room its VM's launcher Pod asks for (its
//     template's reservation, of the revision it pins);
//   - every hand-made VM untouched (handmadeView);
//   - `kubectl vmctl status --exit-code` exits 0;
//   - `kubectl vmctl diff` reports exactly the soak's hand edits;
//   - the agents' requests within budget (soakRequests).
func (s *soak) checkStep(op string, began time.Time) (settled time.Duration) {
	t := s.t
	t.Helper()
	settleStart := time.Now()
	deadline := settleStart.Add(soakSettleMax)
	for {
		var forGC map[string]bool
		err := s.obs.waitFor(s.ctx, time.Until(deadline), "the cluster to settle after "+op, func() (bool, string) {
			ok, seen, gc := s.settled()
			forGC = gc
			return ok, seen
		})
		if err != nil {
			s.fatalf("after %s: %v\n%s", op, err, s.diagnose())
		}
		pods := map[string]string{} // Pod UID by derived VM name, before gc
		for _, vm := range s.obs.derivedVMs() {
			pods[vm.Name] = vm.Annotations[contract.AnnotationPodUID]
		}
		deleted, err := s.gc()
		if err != nil {
			// For about 15 s after an API server restart every VM write
			// under an admission policy is refused (see docs/operations.md): retry,
			// as a user would.
			if time.Now().After(deadline) {
				s.fatalf("after %s: %v", op, err)
			}
			select {
			case <-s.ctx.Done():
				s.fatalf("after %s: %v", op, s.ctx.Err())
			case <-time.After(time.Second):
			}
			continue
		}
		for name := range deleted {
			if forGC[name] {
				continue
			}
			// The informers may lag, after etcd or the API server came
			// back: gc was right if the VM's Pod is gone by a fresh list
			// (its ownerReference would have had the garbage collector
			// delete it soon).
			if gone, err := s.podGone(pods, name); err != nil || !gone {
				s.fatalf("after %s: kubectl vmctl gc deleted VM %s (its Pod gone: %v, %v); the VMs left without Pod or owner were %v", op, name, gone, err, sortedKeys(forGC))
			}
		}
		if len(forGC) == 0 {
			s.checks++
			break
		}
		if time.Now().After(deadline) {
			s.fatalf("after %s: kubectl vmctl gc left VMs %v, which have neither Pod nor owner", op, sortedKeys(forGC))
		}
		// Settle again without them; what the informer shows may lag
		// what gc listed.
		select {
		case <-s.obs.changed:
		case <-time.After(time.Second):
		}
	}
	if err := s.commandsClean(deadline); err != nil {
		s.fatalf("after %s: %v", op, err)
	}
	s.checks += 2
	if err := s.checkReservations(); err != nil {
		s.fatalf("after %s: %v", op, err)
	}
	s.checks++
	if err := s.checkHandmade(); err != nil {
		s.fatalf("after %s: %v", op, err)
	}
	s.checks++
	if v := s.obs.takeViolations(); len(v) > 0 {
		s.fatalf("after %s: the VM watch saw:\n%s", op, strings.Join(v, "\n"))
	}
	s.checks++
	settled = time.Since(settleStart)
	if settled > s.longestSettle {
		s.longestSettle, s.longestSettleOp = settled, op
	}
	s.requests.step(t, op, time.Since(began))
	s.checks++
	s.steps++
	return settled
}

// settled reports whether the informers show the expected shape with
// every Pod paired, what they show otherwise, and the derived VMs that have
// neither their Pod nor an owner (gc's to delete).
func (s *soak) settled() (bool, string, map[string]bool) {
	var problems []string
	forGC := map[string]bool{}
	live := map[string]*corev1.Pod{} // by UID
	for _, p := range s.obs.agentPods() {
		if p.DeletionTimestamp != nil {
			problems = append(problems, "Pod "+p.Name+" terminating")
		}
	}
	vms := map[string]*kubevirtv1.VirtualMachine{}
	for _, vm := range s.obs.derivedVMs() {
		vms[vm.Name] = vm
	}
	for proto, want := range s.want() {
		pods := s.obs.runningPods(scaffold.DefaultName(proto))
		if len(pods) != want {
			problems = append(problems, fmt.Sprintf("%d Pods of %s, want %d", len(pods), scaffold.DefaultName(proto), want))
		}
		for _, p := range pods {
			live[string(p.UID)] = p
			if why := s.pairProblem(proto, p, vms[derive.Name(proto, p.Name, p.UID)]); why != "" {
				problems = append(problems, "Pod "+p.Name+": "+why)
			}
		}
	}
	for _, vm := range vms {
		switch {
		case live[vm.Annotations[contract.AnnotationPodUID]] != nil:
		case vm.DeletionTimestamp != nil:
			problems = append(problems, fmt.Sprintf("VM %s of a gone Pod being deleted", vm.Name))
		case len(vm.OwnerReferences) == 0:
			forGC[vm.Name] = true
		default:
			problems = append(problems, fmt.Sprintf("VM %s outlives its Pod %s (uid %s)", vm.Name, vm.Annotations[contract.AnnotationPodName], vm.Annotations[contract.AnnotationPodUID]))
		}
	}
	sort.Strings(problems)
	return len(problems) == 0, strings.Join(problems, "; "), forGC
}

// want is how many running agent Pods each prototype's workload should have.
func (s *soak) want() map[string]int {
	return map[string]int{
		soakDeployProto: s.replicas[soakDeployProto],
		soakSTSProto:    s.replicas[soakSTSProto],
		soakDSProto:     len(s.nodes),
	}
}

// pairProblem says what is wrong with Pod p and vm, the VM of its name.
func (s *soak) pairProblem(proto string, p *corev1.Pod, vm *kubevirtv1.VirtualMachine) string {
	obj, ok, _ := s.obs.nodes.GetByKey(p.Spec.NodeName)
	switch {
	case !ok:
		return "on node " + p.Spec.NodeName + ", which is gone"
	case obj.(*corev1.Node).Spec.Unschedulable:
		return "on cordoned node " + p.Spec.NodeName
	case !podReady(p):
		return "not Ready"
	case vm == nil:
		return "no VM " + derive.Name(proto, p.Name, p.UID)
	case vm.Annotations[contract.AnnotationPodUID] != string(p.UID):
		return fmt.Sprintf("VM %s belongs to Pod uid %s, not %s", vm.Name, vm.Annotations[contract.AnnotationPodUID], p.UID)
	case vm.DeletionTimestamp != nil:
		return "VM " + vm.Name + " being deleted"
	case testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) != p.Spec.NodeName:
		return fmt.Sprintf("VM %s pinned to %q, Pod on %s", vm.Name, testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity), p.Spec.NodeName)
	case !ownedBy(vm, p):
		return fmt.Sprintf("VM %s not owned by the Pod: %v", vm.Name, vm.OwnerReferences)
	case p.Annotations[contract.AnnotationVMRevision] == "":
		return "pins no VM revision"
	case vm.Annotations[contract.AnnotationVMRevision] != p.Annotations[contract.AnnotationVMRevision]:
		return fmt.Sprintf("VM %s of revision %q, the Pod pins %q", vm.Name, vm.Annotations[contract.AnnotationVMRevision], p.Annotations[contract.AnnotationVMRevision])
	case !vm.Status.Ready || vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning:
		return fmt.Sprintf("VM %s %s, ready %v", vm.Name, vm.Status.PrintableStatus, vm.Status.Ready)
	}
	return ""
}

func ownedBy(vm *kubevirtv1.VirtualMachine, p *corev1.Pod) bool {
	for _, ref := range vm.OwnerReferences {
		if ref.Kind == "Pod" && ref.UID == p.UID {
			return true
		}
	}
	return false
}

// podGone reports whether the Pod whose UID pods holds for VM name is gone
// from a fresh list of the soak's Pods.
func (s *soak) podGone(pods map[string]string, name string) (bool, error) {
	uid, ok := pods[name]
	if !ok {
		return false, fmt.Errorf("VM %s was not in the informer's cache", name)
	}
	list, err := e.kube.CoreV1().Pods(s.ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, p := range list.Items {
		if string(p.UID) == uid {
			return false, nil
		}
	}
	return true, nil
}

// gc runs kubectl vmctl gc with no minimum age and returns what it deleted.
func (s *soak) gc() (map[string]bool, error) {
	out, stderr, code, err := soakCommand(s.ctx, e.binary, "gc", "-n", s.ns, "--min-age=0s", "-o", "name")
	if err != nil || code != 0 {
		return nil, commandError("kubectl vmctl gc", code, err, stderr)
	}
	deleted := map[string]bool{}
	for _, line := range strings.Fields(out) {
		_, name, _ := strings.Cut(line, "/")
		deleted[name] = true
	}
	return deleted, nil
}

// commandsClean runs status --exit-code and diff until status is clean and
// diff shows exactly the hand edits, or until deadline: both read what
// the informers may not have seen yet (a Pod's readiness lags its VM's by a
// probe).
func (s *soak) commandsClean(deadline time.Time) error {
	for {
		var statusErr, diffErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			out, stderr, code, err := soakCommand(s.ctx, e.binary, "status", "-n", s.ns, "--exit-code")
			if err != nil || code != 0 {
				statusErr = commandError("kubectl vmctl status --exit-code", code, err, out+stderr)
			}
		})
		wg.Go(func() { diffErr = s.checkDiff() })
		wg.Wait()
		if statusErr == nil && diffErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(statusErr, diffErr)
		}
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// checkDiff runs kubectl vmctl diff and checks that the VMs it reports are
// exactly those the soak edited by hand, each with only that edit: its
// "app" label changed from the prototype's.
func (s *soak) checkDiff() error {
	out, stderr, code, err := soakCommand(s.ctx, e.binary, "diff", "-n", s.ns)
	if err != nil || code > 1 {
		return commandError("kubectl vmctl diff", code, err, stderr)
	}
	want := map[string][]string{}
	for _, vm := range s.obs.derivedVMs() {
		if v, ok := s.edits[vm.UID]; ok {
			want[vm.Name] = []string{"+app:testvm", "-app:" + v}
		}
	}
	got := parseDiff(out)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("kubectl vmctl diff (exit %d) reports %v, want the hand edits %v:\n%s", code, got, want, out)
	}
	// A workload whose template pins another revision than its
	// prototype's (edited, or undone, and not rolled out) is a difference
	// too, which diff names with what rollout restart would do.
	pending := strings.Count(out, "rollout restart")
	if (code == 1) != (len(want) > 0 || pending > 0) {
		return fmt.Errorf("kubectl vmctl diff exited %d with %d hand-edited VMs and %d workloads to roll out:\n%s", code, len(want), pending, out)
	}
	return nil
}

// parseDiff returns, by VM name, the changed lines of each unified diff of
// a VM in out, without spaces, sorted. The diffs of a prototype's pinned
// revision against the one rollout restart would pin ("--- prototype
// NS/NAME ...") are not a VM's: checkDiff counts those workloads apart.
func parseDiff(out string) map[string][]string {
	got := map[string][]string{}
	var vm string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "--- prototype "):
			vm = ""
		case strings.HasPrefix(line, "--- "):
			ref, _, _ := strings.Cut(strings.TrimPrefix(line, "--- "), " ")
			_, vm, _ = strings.Cut(ref, "/")
			got[vm] = nil
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "@@"):
		case vm != "" && (strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+")):
			got[vm] = append(got[vm], strings.ReplaceAll(line, " ", ""))
		}
	}
	for _, lines := range got {
		sort.Strings(lines)
	}
	return got
}

// kubeVirtAnnotations are the annotations KubeVirt's virt-controller writes
// on every VM, hand-made or not: not the soak's, not vmctl's.
var kubeVirtAnnotations = []string{"kubevirt.io/latest-observed-api-version", "kubevirt.io/storage-observed-api-version"}

// handmadeView is what must stay the same in a hand-made VM, as JSON: its
// UID (not deleted and made again), generation (the API server bumps it on
// any change of spec), labels, annotations (but KubeVirt's own), and spec.
// Left out: what servers set (resourceVersion, managedFields, status, and
// KubeVirt's finalizer).
func handmadeView(vm *kubevirtv1.VirtualMachine) string {
	ann := map[string]string{}
	for k, v := range vm.Annotations {
		ann[k] = v
	}
	for _, k := range kubeVirtAnnotations {
		delete(ann, k)
	}
	b, err := json.Marshal(map[string]any{
		"uid": vm.UID, "generation": vm.Generation, "labels": vm.Labels, "annotations": ann, "spec": vm.Spec,
	})
	if err != nil {
		panic(err) // a VirtualMachine always encodes
	}
	return string(b)
}

// checkHandmade GETs every hand-made VM and compares it with what the soak made.
func (s *soak) checkHandmade() error {
	for _, name := range sortedKeys(s.handmade) {
		vm, err := e.virt.KubevirtV1().VirtualMachines(s.ns).Get(s.ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("hand-made VM %s: %w", name, err)
		}
		if got, want := handmadeView(vm), handmadeView(s.handmade[name]); got != want {
			return fmt.Errorf("hand-made VM %s changed:\n got %s\nwant %s", name, got, want)
		}
	}
	return nil
}

// soakCommand runs a command against the cluster, as runCode does but
// without logging: the soak runs thousands.
func soakCommand(ctx context.Context, name string, args ...string) (string, string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode(), nil
	}
	return stdout.String(), stderr.String(), 0, err
}

// commandError says how a command failed: it could not run (err), or it
// exited with code and said output.
func commandError(what string, code int, err error, output string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: exit %d:\n%s", what, code, output)
}

// policyUnconfigured is how the API server refuses, for about 15 s after
// it restarts, every write an admission policy with a custom-resource
// paramKind matches (see docs/operations.md): the agents' and the soak's own hand edits
// of derived VMs alike.
const policyUnconfigured = "failed to configure policy: failed to find resource referenced by paramKind"

// soakKubectl runs kubectl, retrying for up to a minute while the API
// server refuses with policyUnconfigured, as a user would, and returns an
// error with its stderr on failure.
func soakKubectl(ctx context.Context, args ...string) (string, error) {
	out, stderr, code, err := soakCommand(ctx, "kubectl", args...)
	for end := time.Now().Add(time.Minute); err == nil && code != 0 && strings.Contains(stderr, policyUnconfigured) && time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(time.Second):
		}
		out, stderr, code, err = soakCommand(ctx, "kubectl", args...)
	}
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d", code)
	}
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr))
	}
	return out, nil
}

// checkReservations checks, with one LIST of the launcher Pods, that each
// running agent Pod that holds room for its VM holds what the scheduler
// counts for its VM's launcher Pod, rounded as scaffold rounds it: the
// revision its template pins sized both.
func (s *soak) checkReservations() error {
	launchers, err := e.kube.CoreV1().Pods(s.ns).List(s.ctx, metav1.ListOptions{LabelSelector: kubevirtv1.AppLabel + "=virt-launcher"})
	if err != nil {
		return err
	}
	byPod := map[string]*corev1.Pod{}
	for i := range launchers.Items {
		if l := &launchers.Items[i]; l.DeletionTimestamp == nil {
			byPod[l.Labels[contract.LabelPod]] = l
		}
	}
	holding, compared := 0, 0
	for _, p := range s.obs.runningPods("") {
		held := p.Annotations[contract.AnnotationReservation]
		if held == "" {
			continue
		}
		holding++
		launcher := byPod[p.Name]
		if launcher == nil {
			continue
		}
		compared++
		if need := reserve.Round(reserve.Counted(launcher)); reserve.Stale(held, need) {
			return fmt.Errorf("agent Pod %s holds %s, its VM's launcher Pod %s asks for %s", p.Name, held, launcher.Name, contract.FormatResources(need))
		}
	}
	// Settled, each running Pod's VM runs, so it has a launcher Pod: a
	// check that found none compared nothing.
	if holding > 0 && compared == 0 {
		return fmt.Errorf("none of the %d agent Pods that hold room has a launcher Pod among %d listed: the check compared nothing", holding, len(byPod))
	}
	s.reservationsCompared += compared
	return nil
}
