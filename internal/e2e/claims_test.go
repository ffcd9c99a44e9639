//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// TestStatefulSetVMsKeepTheirClaims scaffolds a StatefulSet "db" of two
// VMs of prototype pvcvm, whose writable claim shared-data it makes per
// replica (--replica-claim), on network storage: static volumes bound to
// no node, which kube-controller-manager's persistentvolume-binder binds.
// Each VM uses its Pod's own claim, shared-data-db-N, and keeps it, the
// same claim by UID, when its Pod is replaced, when a drain under the
// PodDisruptionBudget moves it to another node, and when the StatefulSet
// scales it away (whenScaled: Retain) and back; gc deletes no claim.
// status shows each row's claim, Bound.
func TestStatefulSetVMsKeepTheirClaims(t *testing.T) {
	ns := namespace(t)
	waitOthersGone(t, ns) // the drain would evict them too
	class := networkStorage(t, ns, 3)
	createPrototype(t, ns, "shared-pvc-vm.yaml")
	deploy(t, ns, scaffold.KindStatefulSet, "pvcvm", "--name", "db", "--replicas", "2", "--pdb", "1",
		"--replica-claim", "shared-data=1Gi,class="+class)
	pairs := waitPaired(t, ns, "pvcvm", 2, settle)
	claims := map[string]types.UID{}
	for pod, vm := range pairs {
		claim := "shared-data-" + pod
		if got := claimOf(vm); got != claim {
			t.Errorf("VM %s uses claim %q, want its Pod's own, %s", vm.Name, got, claim)
		}
		claims[pod] = waitBound(t, ns, claim).UID
	}

	rows := statusRows(t, ns)
	var rowPods []string
	for _, r := range rows {
		rowPods = append(rowPods, r.Pod)
		want := []status.Claim{{Name: "shared-data-" + r.Pod, Phase: "Bound"}}
		if !slices.Equal(r.Claims, want) || len(r.Problems) > 0 {
			t.Errorf("status row of %s: claims %v, problems %q; want %v and none", r.Pod, r.Claims, r.Problems, want)
		}
	}
	if slices.Sort(rowPods); !slices.Equal(rowPods, []string{"db-0", "db-1"}) {
		t.Errorf("status rows of Pods %v, want db-0 and db-1", rowPods)
	}

	// The Pod db-0 goes: its successor's VM is a new one on the same claim.
	old := pairs["db-0"]
	if err := e.kube.CoreV1().Pods(ns).Delete(t.Context(), "db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pairs = waitReplaced(t, ns, "pvcvm", "db-0", old.UID, 2)
	checkSameClaim(t, ns, pairs, claims)

	// A drain moves db-0's VM to another node, on its claim: network
	// storage follows it.
	node := pairs["db-0"].Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
	old = pairs["db-0"]
	waitPDBAllows(t, ns, "db", 1)
	t.Cleanup(func() { uncordon(t, node) })
	kubectl(t, nil, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
	pairs = waitReplaced(t, ns, "pvcvm", "db-0", old.UID, 2)
	if vmi := vmiNode(t, ns, pairs["db-0"].Name); vmi == node {
		t.Errorf("db-0's VM runs on the drained node %s", node)
	}
	checkSameClaim(t, ns, pairs, claims)
	uncordon(t, node)

	// Scaled away and back, db-1 finds its claim again (whenScaled:
	// Retain), which gc leaves alone meanwhile.
	kubectl(t, nil, "scale", "statefulset", "db", "-n", ns, "--replicas=1")
	waitPaired(t, ns, "pvcvm", 1, settle)
	vmctl(t, "gc", "-n", ns, "--min-age=0s")
	waitBound(t, ns, "shared-data-db-1")
	kubectl(t, nil, "scale", "statefulset", "db", "-n", ns, "--replicas=2")
	pairs = waitPaired(t, ns, "pvcvm", 2, settle)
	checkSameClaim(t, ns, pairs, claims)
}

// stolenTokenClaims tries, with the bound token of a StatefulSet's agent
// Pod db-0, what docs/security.md's table of a StatefulSet's claims says:
// it may create its own VM on its own Pod's claim only, and read no claim.
func stolenTokenClaims(t *testing.T) {
	ns := namespace(t)
	class := networkStorage(t, ns, 2)
	createPrototype(t, ns, "shared-pvc-vm.yaml")
	deploy(t, ns, scaffold.KindStatefulSet, "pvcvm", "--name", "db", "--replicas", "2", "--replica-claim", "shared-data=1Gi,class="+class)
	waitPaired(t, ns, "pvcvm", 2, settle)
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods["db-0"]
	kube, virt := agentClients(t, ns, "db", pod)
	// The policy is in force once the API server's informers have it: it
	// refuses the agents the prototype's deletion.
	eventually(t, 2*time.Minute, "the admission policy in force", func(ctx context.Context) (bool, string, error) {
		err := virt.KubevirtV1().VirtualMachines(ns).Delete(ctx, "pvcvm", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), fmt.Sprint(err), nil
	})
	own := derivedFromRevision(t, "db", pod, derive.Options{Namespace: ns, Subdomain: "db", ReplicaClaims: []string{"shared-data"}})
	createOn := func(claim string) func() error {
		return func() error {
			vm := own.DeepCopy()
			setClaim(vm, claim)
			_, err := virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	const volumes = "volumes or dataVolumeTemplates are not"
	rows := []claimRow{
		{"create its own VM on its own Pod's claim, shared-data-db-0", true, createOn("shared-data-db-0"), ""},
		{"create its own VM on another replica's claim, shared-data-db-1", false, createOn("shared-data-db-1"), volumes},
		{"create its own VM on the prototype's claim, shared-data", false, createOn("shared-data"), volumes},
		{"create its own VM on a claim of a replica that does not exist yet, shared-data-db-2", false, createOn("shared-data-db-2"), volumes},
		{"read its own Pod's claim", false, func() error {
			_, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "shared-data-db-0", metav1.GetOptions{})
			return err
		}, "RBAC"},
	}
	checkTokenTable(t, "| with the stolen token of `db-0` |", rows)
	checkClaimRows(t, ns, "db", rows)
}

// networkStorage makes a StorageClass of static volumes and n volumes of
// it that no node affinity binds to a node, as network storage is; the
// kwok nodes mount nothing, so their NFS source is never used.
func networkStorage(t *testing.T, ns string, n int) string {
	t.Helper()
	class := "network-" + ns
	testcluster.StaticVolumes(t, e.kube, class, storagev1.VolumeBindingImmediate, networkVolumes(n)...)
	return class
}

// networkVolumes are n volumes of 1Gi on network storage (NFS, at an
// address nothing here mounts), bound to no node.
func networkVolumes(n int) []testcluster.StaticVolume {
	volumes := make([]testcluster.StaticVolume, n)
	for i := range volumes {
		volumes[i] = testcluster.StaticVolume{Size: apiresource.MustParse("1Gi"), Mode: corev1.PersistentVolumeFilesystem,
			Source: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "192.0.2.1", Path: fmt.Sprintf("/vmctl/%d", i)}}}
	}
	return volumes
}

// waitBound waits for claim to be Bound, and returns it.
func waitBound(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var claim *corev1.PersistentVolumeClaim
	eventually(t, settle, "claim "+name+" Bound", func(ctx context.Context) (bool, string, error) {
		c, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		claim = c
		return c.Status.Phase == corev1.ClaimBound && c.DeletionTimestamp == nil, string(c.Status.Phase), nil
	})
	return claim
}

// waitReplaced waits for a VM of prototype for pod other than the one of
// UID old, then for want VMs of prototype paired and ready, and returns
// the pairs.
func waitReplaced(t *testing.T, ns, prototype, pod string, old types.UID, want int) map[string]kubevirtv1.VirtualMachine {
	t.Helper()
	eventually(t, settle, "a new VM for the new Pod "+pod, func(ctx context.Context) (bool, string, error) {
		vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, shortVMName(prototype, pod), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no VM", nil
		}
		if err != nil {
			return false, "", err
		}
		return vm.UID != old, fmt.Sprintf("VM uid %s", vm.UID), nil
	})
	return waitPaired(t, ns, prototype, want, settle)
}

// checkSameClaim checks that each VM of pairs uses its Pod's claim of the
// UID claims recorded.
func checkSameClaim(t *testing.T, ns string, pairs map[string]kubevirtv1.VirtualMachine, claims map[string]types.UID) {
	t.Helper()
	for pod, vm := range pairs {
		name := claimOf(vm)
		c := waitBound(t, ns, name)
		if name != "shared-data-"+pod || c.UID != claims[pod] {
			t.Errorf("VM %s uses claim %s (uid %s), want shared-data-%s of uid %s", vm.Name, name, c.UID, pod, claims[pod])
		}
	}
}

// claimOf is the claim of vm's volume "data".
func claimOf(vm kubevirtv1.VirtualMachine) string {
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

func setClaim(vm *kubevirtv1.VirtualMachine, claim string) {
	for i, v := range vm.Spec.Template.Spec.Volumes {
		if v.Name == "data" {
			vm.Spec.Template.Spec.Volumes[i].PersistentVolumeClaim.ClaimName = claim
		}
	}
}

// vmiNode is the node VMI name runs on.
func vmiNode(t *testing.T, ns, name string) string {
	t.Helper()
	vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return vmi.Status.NodeName
}

// TestNodeLocalClaimsKeepTheirNode scaffolds a StatefulSet "db" of two
// VMs on node-local storage: a WaitForFirstConsumer class of static local
// volumes, one per node, which the scheduler binds where it places each
// agent Pod. Each VM is pinned to its claim's node. A drain evicts db-0,
// whose successor waits Pending for its claim's node, which status shows
// as a wait, not a problem; after uncordon it comes back there, on the
// same claim. Scaled away under whenScaled: Delete, db-1's claim goes,
// but only once its VM's launcher Pod, which the claim protection
// controller waits for, is gone.
func TestNodeLocalClaimsKeepTheirNode(t *testing.T) {
	ns := namespace(t)
	waitOthersGone(t, ns)
	class := localStorage(t, ns)
	createPrototype(t, ns, "shared-pvc-vm.yaml")
	deploy(t, ns, scaffold.KindStatefulSet, "pvcvm", "--name", "db", "--replicas", "2", "--pdb", "1", "--move-after=0",
		"--replica-claim", "shared-data=1Gi,class="+class, "--claims-when-scaled=Delete")
	pairs := waitPaired(t, ns, "pvcvm", 2, settle)
	claims := map[string]types.UID{}
	for pod, vm := range pairs {
		c := waitBound(t, ns, "shared-data-"+pod)
		claims[pod] = c.UID
		if on, vmi := volumeNode(t, c), vmiNode(t, ns, vm.Name); on != vmi {
			t.Errorf("VM %s runs on %s, its claim's volume is on %s", vm.Name, vmi, on)
		}
	}

	node := vmiNode(t, ns, pairs["db-0"].Name)
	old := pairs["db-0"]
	waitPDBAllows(t, ns, "db", 1)
	t.Cleanup(func() { uncordon(t, node) })
	kubectl(t, nil, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
	eventually(t, settle, "db-0 waits for its claim's node", func(ctx context.Context) (bool, string, error) {
		pod, err := e.kube.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.Spec.NodeName == "" && pod.Status.Phase == corev1.PodPending && pod.UID != types.UID(old.Annotations[contract.AnnotationPodUID]),
			fmt.Sprintf("node %q, phase %s", pod.Spec.NodeName, pod.Status.Phase), nil
	})
	rows := statusRows(t, ns)
	if i := slices.IndexFunc(rows, func(r status.Row) bool { return r.Pod == "db-0" }); i < 0 {
		t.Errorf("status shows no row of db-0 waiting for its claim's cordoned node")
	} else if r := rows[i]; len(r.Problems) > 0 || r.Waiting == "" {
		t.Errorf("status of db-0 waiting for its claim's cordoned node: problems %q, waiting %q; want a wait, no problem", r.Problems, r.Waiting)
	}
	uncordon(t, node)
	pairs = waitReplaced(t, ns, "pvcvm", "db-0", old.UID, 2)
	if got := vmiNode(t, ns, pairs["db-0"].Name); got != node {
		t.Errorf("db-0's VM runs on %s after uncordon, want %s, its claim's node", got, node)
	}
	checkSameClaim(t, ns, pairs, claims)

	// Scaled away under whenScaled: Delete, db-1's claim goes after its
	// VM's launcher Pod: never while a Pod uses it.
	launcher := launcherPods(t, ns, map[string]kubevirtv1.VirtualMachine{"db-1": pairs["db-1"]})["db-1"]
	if launcher == "" {
		t.Fatal("db-1's VMI names no launcher Pod")
	}
	kubectl(t, nil, "scale", "statefulset", "db", "-n", ns, "--replicas=1")
	eventually(t, settle, "db-1's claim gone, after its launcher Pod", func(ctx context.Context) (bool, string, error) {
		_, cerr := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "shared-data-db-1", metav1.GetOptions{})
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		launcherLeft := slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.UID == launcher })
		if apierrors.IsNotFound(cerr) && launcherLeft {
			t.Errorf("claim shared-data-db-1 is gone while db-1's launcher Pod %s still exists", launcher)
			return true, "", nil
		}
		return apierrors.IsNotFound(cerr), fmt.Sprintf("claim: %v; launcher Pod left: %v", cerr, launcherLeft), nil
	})
}

// localStorage makes a WaitForFirstConsumer StorageClass of static local
// volumes and one volume of it on each node, bound to that node. One a
// node: no two replicas share a node, so a drain evicts one only.
func localStorage(t *testing.T, ns string) string {
	t.Helper()
	class := "local-" + ns
	var volumes []testcluster.StaticVolume
	for _, node := range e.cluster.Nodes {
		volumes = append(volumes, testcluster.StaticVolume{Size: apiresource.MustParse("1Gi"), Mode: corev1.PersistentVolumeFilesystem,
			Source: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/vmctl"}}, Node: node})
	}
	testcluster.StaticVolumes(t, e.kube, class, storagev1.VolumeBindingWaitForFirstConsumer, volumes...)
	return class
}

// volumeNode is the node the volume bound to claim c is on.
func volumeNode(t *testing.T, c *corev1.PersistentVolumeClaim) string {
	t.Helper()
	pv, err := e.kube.CoreV1().PersistentVolumes().Get(t.Context(), c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
}

// claimRow is a row of one of docs/security.md's tables of what a stolen
// token can do with the policy on: what it tries, whether it may, and if
// not, who refuses it (as securityRows' because says).
type claimRow struct {
	name    string
	allow   bool
	try     func() error
	because string
}

// checkClaimRows tries rows with the token of an agent of workload in ns,
// and checks each is allowed, or refused by whom its row says.
func checkClaimRows(t *testing.T, ns, workload string, rows []claimRow) {
	t.Helper()
	for _, r := range rows {
		err := r.try()
		allowed := err == nil || apierrors.IsAlreadyExists(err)
		if allowed != r.allow || !allowed && !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v; want allowed=%v, else 403", r.name, err, r.allow)
		}
		if !allowed {
			checkRefusedBy(t, ns, workload, r.because, err)
		}
	}
}

// checkTokenTable checks that docs/security.md's table whose header starts
// with header says what rows try, in their order.
func checkTokenTable(t *testing.T, header string, rows []claimRow) {
	t.Helper()
	b, err := os.ReadFile(repoFile("docs/security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n"+header)
	if !ok {
		t.Fatalf("docs/security.md has no table headed %s", header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var got, want []string
	for _, line := range strings.Split(table, "\n")[2:] { // the header's rest and the separator
		cells := strings.Split(strings.Trim(line, "| "), "|")
		allowed := strings.HasPrefix(strings.TrimSpace(strings.ReplaceAll(cells[len(cells)-1], "*", "")), "yes")
		got = append(got, fmt.Sprintf("%s: %v", strings.ReplaceAll(strings.TrimSpace(cells[0]), "`", ""), allowed))
	}
	for _, r := range rows {
		want = append(want, fmt.Sprintf("%s: %v", r.name, r.allow))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/security.md's table %s says\n%s\nthe test tries\n%s", header, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
