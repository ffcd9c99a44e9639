//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// TestKubeVirtUpgradesUnderAFleet replaces KubeVirt v1.8.0 by v1.9.0 in
// place (kvharness.Upgrade: CRDs and RBAC, then virt-controller, then
// virt-api, as virt-operator's update path goes) under a running fleet: a
// Deployment of 2, a DaemonSet on 2 nodes and a StatefulSet of 2 with a
// claim per replica (--replica-claim, on network storage), scaffolded on
// v1.8.0 with their policies, on a control plane of its own with the
// kubelet double and the virt-handler stand-in. Through the upgrade no VM
// is deleted or made and no agent Pod stops being Ready for longer than
// it. After it, under v1.9.0's webhooks and the policies, a scale-up, a
// replaced Pod and a DaemonSet Pod on a new node each get their VM of the
// v1.8.0 revision; status names every Pod whose launcher v1.9.0 made for
// a VM with a containerDisk as reserving v1.8.0's size (the StatefulSet's
// VMs have none, and their launchers ask the same on both releases).
// KubeVirt's workloadUpdateStrategy Evict then restarts the DaemonSet's
// older VMs on their nodes in v1.9.0 launchers, and the Deployment's and
// the StatefulSet's agents evict their Pods, whose VMs go with them (see
// evictOutdated); the StatefulSet's new Pods, of the same names, get VMs
// on the same claims; status names the others' Pods too; rollout restart
// puts them all right, and each StatefulSet VM still has the claim it had
// before the upgrade.
func TestKubeVirtUpgradesUnderAFleet(t *testing.T) {
	t.Parallel() // runs once the package's other tests are done: see eachKubeVirt
	ctx := t.Context()
	from, err := kvharness.EnsureRelease(ctx, kvharness.Previous, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	to, err := kvharness.EnsureRelease(ctx, kvharness.Newest, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Nodes: 2, Binaries: e.cluster.Binaries, CRDs: []string{from.CRDs}, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	unwatch := c.StopOnSignal()
	t.Cleanup(func() {
		unwatch()
		if err := c.Stop(); err != nil {
			t.Errorf("stop the upgrade's cluster: %v", err)
		}
	})
	kv, err := kvharness.Start(ctx, c, kvharness.Options{Binaries: from, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallVmctlCRD(ctx, e.binary); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(c.Dir, "doubles.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(logFile, nil))
	dctx, stopDoubles := context.WithCancel(context.Background())
	var doublesDone sync.WaitGroup
	doublesDone.Go(func() { _ = doubles.RunVirtHandler(dctx, kv, log) })
	doublesDone.Go(func() {
		_ = doubles.NewKubelet(c.DoublesConfig, doubles.KubeletOptions{
			Binary: e.binary, AgentBinary: e.agentBinary, Dir: filepath.Join(c.Dir, "kubelet"), Log: log,
		}).Run(dctx)
	})
	t.Cleanup(func() {
		stopDoubles()
		doublesDone.Wait()
		_ = logFile.Close()
	})
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	virt, err := kubevirt.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := testcluster.Namespace(t, kube, nil)
	for _, file := range []string{"testvm.yaml", "shared-pvc-vm.yaml"} {
		if _, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, readPrototype(t, file, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	class := "network-" + ns
	testcluster.StaticVolumes(t, kube, class, storagev1.VolumeBindingImmediate, networkVolumes(2)...)
	at := "--kubeconfig=" + c.Kubeconfig
	for _, args := range [][]string{
		{"deployment", "testvm", "--name", "deployment", "--replicas", "2"},
		{"daemonset", "testvm", "--name", "daemonset"},
		{"statefulset", "pvcvm", "--name", "db", "--replicas", "2", "--replica-claim", "shared-data=1Gi,class=" + class},
	} {
		args = append([]string{"scaffold"}, append(args, "-n", ns, "--grace-period", "60", at)...)
		kubectl(t, []byte(vmctl(t, args...)), "apply", "-f", "-", at)
	}
	fleet := fleetOn{kube: kube, virt: virt, ns: ns}
	before := slices.Collect(maps.Keys(fleet.waitReady(t, 6)))
	claims := fleet.claimsOf(t, "pvcvm-db-")
	if len(claims) != 2 {
		t.Fatalf("the StatefulSet's VMs use claims %v, want one each", claims)
	}

	// Through the upgrade: every VM made or deleted, and how long each
	// agent Pod was not Ready.
	watched := fleet.watch(t)
	begin := time.Now()
	if err := kv.Upgrade(ctx, to); err != nil {
		t.Fatalf("upgrade KubeVirt in place: %v", err)
	}
	took := time.Since(begin)
	t.Logf("KubeVirt %s replaced by %s in place in %s", from.Version, to.Version, took.Round(time.Millisecond))

	// After it, new Pods get their VMs of the v1.8.0 revision under
	// v1.9.0's webhooks and the policies. Once they are Ready, the new
	// virt-controller has long since synced every VM it found.
	kubectl(t, nil, "scale", "deployment/deployment", "-n", ns, "--replicas=3", at)
	fleet.waitReady(t, 7)
	// A Pod made before the upgrade: its replacement's VM is new, and one
	// older Deployment VM is left for KubeVirt's Evict below.
	var replaced string
	for _, name := range slices.Sorted(slices.Values(before)) {
		if strings.HasPrefix(name, "deployment-") {
			replaced = name
			break
		}
	}
	if err := kube.CoreV1().Pods(ns).Delete(ctx, replaced, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNodesWith(ctx, []string{"upgrade-node-3"}, func(*corev1.Node) {}); err != nil {
		t.Fatal(err)
	}
	pods := fleet.waitReady(t, 8)
	if _, ok := pods[replaced]; ok {
		t.Errorf("Pod %s is still there", replaced)
	}
	made, deleted, notReady := watched.stop()
	t.Logf("agent Pods not Ready through the upgrade and after it: %v", notReady)
	if len(made) != 3 || len(deleted) != 1 {
		t.Errorf("VMs made %v and deleted %v through the upgrade and after it; want 3 made (the scale-up, the replaced Pod's, the new node's) and 1 deleted (the replaced Pod's)", made, deleted)
	}
	for pod, d := range notReady {
		if d > took {
			t.Errorf("agent Pod %s was not Ready for %s, longer than the upgrade (%s)", pod, d.Round(time.Millisecond), took.Round(time.Millisecond))
		}
	}

	// The launcher Pods made before the upgrade ask what v1.8.0 made
	// them ask, as their Pods reserve; those made after, v1.9.0's.
	var after []string
	for name := range pods {
		if !slices.Contains(before, name) {
			after = append(after, name)
		}
	}
	stale := staleProblems(t, ns, at)
	if got := slices.Sorted(maps.Keys(stale)); !slices.Equal(got, slices.Sorted(slices.Values(after))) {
		t.Errorf("status names %v as reserving another size than their VMs need, want the Pods made after the upgrade, %v: %v", got, after, stale)
	}

	// KubeVirt's default workloadUpdateStrategy (no method) leaves the
	// older launchers be. With Evict, KubeVirt evicts each; a derived VM's
	// evictionStrategy External makes that an evacuation. A DaemonSet's
	// agent (--stop-on-evacuation) stops its VM, and KubeVirt starts it
	// again on its node, in a launcher of the new release: the VM stays,
	// only its VMI goes. A Deployment's or StatefulSet's agent
	// (--evict-on-evacuation) evicts its own Pod, and its VM goes with it:
	// the new Pod makes a VM of its own, a StatefulSet's of the same name
	// on the same claim.
	podUIDs := map[string]types.UID{}
	for name, pod := range pods {
		podUIDs[name] = pod.UID
	}
	restarted, withPods := fleet.evictOutdated(t, to.LauncherImage(), "testvm-daemonset-")
	if len(restarted) != 2 {
		t.Errorf("KubeVirt's Evict restarted the VMs of %v in place, want the DaemonSet's 2 made before the upgrade", restarted)
	}
	if len(withPods) != 3 {
		t.Errorf("KubeVirt's Evict replaced the VMs of %v with their Pods, want the one Deployment VM made before the upgrade and still there, and the StatefulSet's 2", withPods)
	}
	pods = fleet.waitReady(t, 8)
	after = after[:0]
	for name, pod := range pods {
		// The StatefulSet's VMs have no containerDisk, whose container
		// v1.9.0's launcher no longer has: their launchers ask the same
		// on both releases.
		if (!slices.Contains(before, name) || strings.HasPrefix(name, "daemonset-")) && !strings.HasPrefix(name, "db-") {
			after = append(after, name)
		}
		if slices.Contains(before, name) && (strings.HasPrefix(name, "deployment-") || strings.HasPrefix(name, "db-") && pod.UID == podUIDs[name]) {
			t.Errorf("Pod %s, made before the upgrade, is still there after KubeVirt's Evict (%s)", name, pod.Status.Phase)
		}
	}
	stale = staleProblems(t, ns, at)
	if got := slices.Sorted(maps.Keys(stale)); !slices.Equal(got, slices.Sorted(slices.Values(after))) {
		t.Errorf("status names %v as reserving another size than their VMs need, want the Pods whose launcher v1.9.0 made, %v: %v", got, after, stale)
	}
	for _, prototype := range []string{"testvm", "pvcvm"} {
		vmctl(t, "rollout", "restart", prototype, "-n", ns, at)
		vmctl(t, "rollout", "status", prototype, "-n", ns, "--timeout", "3m", at)
	}
	fleet.waitReady(t, 8)
	if stale := staleProblems(t, ns, at); len(stale) > 0 {
		t.Errorf("after rollout restart status still says: %v", stale)
	}
	if now := fleet.claimsOf(t, "pvcvm-db-"); !maps.Equal(now, claims) {
		t.Errorf("the StatefulSet's VMs use claims %v after the upgrade, Evict and rollout restart; want those they had before, %v", now, claims)
	}
}

// claimsOf returns, for each derived VM whose name begins with prefix, the
// claim its volume data names, and that claim's UID.
func (f fleetOn) claimsOf(t *testing.T, prefix string) map[string]string {
	t.Helper()
	vms, err := f.virt.KubevirtV1().VirtualMachines(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: derive.DerivedSelector})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, vm := range vms.Items {
		if !strings.HasPrefix(vm.Name, prefix) || vm.DeletionTimestamp != nil {
			continue
		}
		name := claimOf(vm)
		claim, err := f.kube.CoreV1().PersistentVolumeClaims(f.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("VM %s's claim %q: %v", vm.Name, name, err)
		}
		out[vm.Name] = name + " " + string(claim.UID)
	}
	return out
}

// evictOutdated sets KubeVirt's workloadUpdateStrategy to Evict, up to 10
// VMIs at once (its workload updater looks again only every 30 s, so one
// at a time would take half a minute each), and waits until every VMI runs
// in a launcher of image and every agent Pod is Ready with its VM again.
// The VMIs whose names begin with inPlace (a DaemonSet's) must come back
// under the same VM on the same node; every other outdated VM must go with
// its Pod, and one new VM come for each (a StatefulSet's new Pod has the
// old one's name, and so has its VM). It returns the VMs restarted in
// place and those replaced.
func (f fleetOn) evictOutdated(t *testing.T, image, inPlace string) (restarted, replaced []string) {
	t.Helper()
	vmis, err := f.virt.KubevirtV1().VirtualMachineInstances(f.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type placed struct {
		uid  types.UID
		node string
	}
	outdated := map[string]placed{}
	for _, vmi := range vmis.Items {
		if vmi.Status.LauncherContainerImageVersion != image {
			outdated[vmi.Name] = placed{vmi.UID, vmi.Status.NodeName}
			if strings.HasPrefix(vmi.Name, inPlace) {
				restarted = append(restarted, vmi.Name)
			} else {
				replaced = append(replaced, vmi.Name)
			}
		}
	}
	watched := f.watch(t)
	patch := `{"spec":{"workloadUpdateStrategy":{"workloadUpdateMethods":["Evict"],"batchEvictionSize":10,"batchEvictionInterval":"1s"}}}`
	if _, err := f.virt.KubevirtV1().KubeVirts(kvharness.Namespace).Patch(t.Context(), kvharness.CRName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "every VMI in a launcher of "+image, func(ctx context.Context) (bool, string, error) {
		now, err := f.virt.KubevirtV1().VirtualMachineInstances(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		done := len(now.Items) == len(vmis.Items)
		for _, vmi := range now.Items {
			old, wasOutdated := outdated[vmi.Name]
			seen = append(seen, fmt.Sprintf("%s on %s, %s", vmi.Name, vmi.Status.NodeName, vmi.Status.LauncherContainerImageVersion))
			switch {
			case vmi.Status.LauncherContainerImageVersion != image || !vmiReadyOf(&vmi):
				done = false
			case wasOutdated && vmi.UID == old.uid:
				// Not yet restarted, or its Pod's VM, deleted with the
				// Pod, not yet gone.
				done = false
			case wasOutdated && strings.HasPrefix(vmi.Name, inPlace) && vmi.Status.NodeName != old.node:
				t.Errorf("VMI %s came back on node %s, not on its VM's, %s", vmi.Name, vmi.Status.NodeName, old.node)
			}
		}
		return done, strings.Join(seen, "; "), nil
	})
	f.waitReady(t, len(vmis.Items))
	made, deleted, notReady := watched.stop()
	if !slices.Equal(slices.Sorted(slices.Values(deleted)), slices.Sorted(slices.Values(replaced))) || len(made) != len(replaced) {
		t.Errorf("VMs made %v and deleted %v while KubeVirt evicted the older launchers; want %v deleted with their Pods and as many made for the new Pods, the DaemonSet's VMs kept",
			made, deleted, replaced)
	}
	t.Logf("agent Pods not Ready while KubeVirt evicted the older launchers: %v", notReady)
	return restarted, replaced
}

// vmiReadyOf tells whether vmi's Ready condition is True.
func vmiReadyOf(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fleetOn reads the agent Pods and derived VMs of a namespace of a cluster
// other than the shared one.
type fleetOn struct {
	kube kubernetes.Interface
	virt kubevirt.Interface
	ns   string
}

// waitReady waits until n agent Pods run, each Ready with one Ready VM made
// for it, and returns them by name.
func (f fleetOn) waitReady(t *testing.T, n int) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	eventually(t, settle, fmt.Sprintf("%d agent Pods Ready with their VMs", n), func(ctx context.Context) (bool, string, error) {
		list, err := f.kube.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: agentSelector})
		if err != nil {
			return false, "", err
		}
		vms, err := f.virt.KubevirtV1().VirtualMachines(f.ns).List(ctx, metav1.ListOptions{LabelSelector: derive.DerivedSelector})
		if err != nil {
			return false, "", err
		}
		ready := map[types.UID]bool{}
		for _, vm := range vms.Items {
			if vm.Status.Ready && vm.DeletionTimestamp == nil {
				ready[derive.OriginOf(&vm).PodUID] = true
			}
		}
		pods = map[string]corev1.Pod{}
		var seen []string
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				seen = append(seen, p.Name+" terminating")
				continue
			}
			pods[p.Name] = p
			seen = append(seen, fmt.Sprintf("%s ready %v, VM ready %v", p.Name, podReady(&p), ready[p.UID]))
			if !podReady(&p) || !ready[p.UID] {
				return false, strings.Join(seen, "; "), nil
			}
		}
		return len(pods) == n && len(list.Items) == n && len(vms.Items) == n, strings.Join(seen, "; "), nil
	})
	return pods
}

// upgradeWatch records, from when watch returned, the VMs made and
// deleted and how long each agent Pod there then was not Ready (a Pod
// made later is not Ready until its VM is).
type upgradeWatch struct {
	cancel        context.CancelFunc
	done          sync.WaitGroup
	mu            sync.Mutex
	synced        bool
	made, deleted []string
	since         map[string]time.Time // agent Pods not Ready, since when
	notReady      map[string]time.Duration
	known         map[string]bool // the agent Pods there when watch returned
}

// watch starts an upgradeWatch: an informer on the namespace's derived VMs
// and one on its agent Pods. Replacing KubeVirt's CRDs ends every watch of
// their kinds, as in a cluster, and the watch cache the API server builds
// anew may not resume from the last event seen: an informer lists again,
// and tells what came and went meanwhile.
func (f fleetOn) watch(t *testing.T) *upgradeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &upgradeWatch{cancel: cancel, since: map[string]time.Time{}, notReady: map[string]time.Duration{}, known: map[string]bool{}}
	vms := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = derive.DerivedSelector
			return f.virt.KubevirtV1().VirtualMachines(f.ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = derive.DerivedSelector
			return f.virt.KubevirtV1().VirtualMachines(f.ns).Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachine{}, 0, cache.Indexers{})
	pods := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = agentSelector
			return f.kube.CoreV1().Pods(f.ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = agentSelector
			return f.kube.CoreV1().Pods(f.ns).Watch(ctx, opts)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	nameOf := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, _ := obj.(metav1.Object)
		return m.GetName()
	}
	_, err := vms.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.synced {
				w.made = append(w.made, nameOf(obj))
			}
		},
		DeleteFunc: func(obj any) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.deleted = append(w.deleted, nameOf(obj))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	podChanged := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		w.mu.Lock()
		defer w.mu.Unlock()
		name := nameOf(obj)
		if !w.synced {
			w.known[name] = true
		}
		if !w.known[name] {
			return
		}
		start, down := w.since[name]
		switch up := ok && p.DeletionTimestamp == nil && podReady(p); {
		case !up && !down && ok && p.DeletionTimestamp == nil:
			w.since[name] = time.Now()
		case (up || !ok || p.DeletionTimestamp != nil) && down:
			w.notReady[name] += time.Since(start)
			delete(w.since, name)
		}
	}
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    podChanged,
		UpdateFunc: func(_, obj any) { podChanged(obj) },
		DeleteFunc: podChanged,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.done.Go(func() { vms.RunWithContext(ctx) })
	w.done.Go(func() { pods.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), vms.HasSynced, pods.HasSynced) {
		t.Fatal("the upgrade's informers did not sync")
	}
	w.mu.Lock()
	w.synced = true
	w.mu.Unlock()
	t.Cleanup(w.close)
	return w
}

// stop ends the informers and returns what they saw: a Pod still not Ready
// counts until now.
func (w *upgradeWatch) stop() (made, deleted []string, notReady map[string]time.Duration) {
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, start := range w.since {
		w.notReady[name] += time.Since(start)
	}
	slices.Sort(w.made)
	slices.Sort(w.deleted)
	return w.made, w.deleted, w.notReady
}

func (w *upgradeWatch) close() {
	w.cancel()
	w.done.Wait()
}
