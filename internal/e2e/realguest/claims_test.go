//go:build e2e

package realguest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// TestStatefulSetGuestsKeepTheirDisks runs a StatefulSet "db" of two VMs
// of testdata/guest-disk.yaml, whose claim "data" each replica has its
// own of (--replica-claim) on a static local volume of the real node, of
// Filesystem mode (KubeVirt keeps disk.img on it) and of Block mode (a
// loop device, which the VM uses whole). Each guest marks its disk with a
// token on its first boot and says so on its console. Each later VM of
// that replica, a new VMI in a new launcher Pod on the same claim (same
// UID), must find the same token: after its Pod is deleted, after a drain
// under the PodDisruptionBudget and uncordon, and after a scale-in and out
// under whenScaled Retain. Under whenScaled Delete, the claim goes only
// once its VM's launcher Pod is gone.
func TestStatefulSetGuestsKeepTheirDisks(t *testing.T) {
	for _, mode := range []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock} {
		t.Run(string(mode), func(t *testing.T) { guestsKeepTheirDisks(t, mode) })
	}
}

func guestsKeepTheirDisks(t *testing.T, mode corev1.PersistentVolumeMode) {
	ns := namespace(t)
	class := localVolumes(t, ns, 2, mode)
	mustKubectl(t, nil, "apply", "-n", ns, "-f", repoFile("testdata/guest-disk.yaml"))
	manifests, stderr, code := runCode(t, nil, e.binary, "scaffold", "statefulset", "guest-disk", "-n", ns, "--image", e.image,
		"--name", "db", "--replicas", "2", "--pdb", "1", "--move-after=0", "--replica-claim", "data=64Mi,mode="+string(mode)+",class="+class)
	if code != 0 {
		t.Fatalf("kubectl vmctl scaffold: exit %d: %s", code, stderr)
	}
	mustKubectl(t, []byte(manifests), "apply", "-f", "-")
	readyAgents(t, ns, 2)
	tokens, claims := map[string]string{}, map[string]types.UID{}
	for _, pod := range []string{"db-0", "db-1"} {
		g := guestOf(t, ns, pod)
		tokens[pod] = g.token(t, "written to")
		claims[pod] = g.claim
	}

	t.Run("a replaced Pod's guest finds its token", func(t *testing.T) {
		old := guestOf(t, ns, "db-0")
		mustKubectl(t, nil, "delete", "pod", "-n", ns, "db-0")
		again(t, ns, "db-0", old, tokens, claims)
	})

	t.Run("a drained replica's guest finds its token after uncordon", func(t *testing.T) {
		old := guestOf(t, ns, "db-0")
		t.Cleanup(func() { kubectl(t, nil, "uncordon", e.node.Name) })
		// Only db-0: its successor has nowhere else to go (its volume is
		// on this node), so the budget would hold db-1's eviction.
		mustKubectl(t, nil, "drain", e.node.Name, "--pod-selector", "statefulset.kubernetes.io/pod-name=db-0",
			"--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
		eventually(t, time.Minute, "db-0 waits for the cordoned node", func(ctx context.Context) (bool, string, error) {
			p, err := e.kube.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return p.UID != old.pod && p.Spec.NodeName == "", fmt.Sprintf("uid %s on %q", p.UID, p.Spec.NodeName), nil
		})
		mustKubectl(t, nil, "uncordon", e.node.Name)
		again(t, ns, "db-0", old, tokens, claims)
	})

	t.Run("a replica scaled away and back finds its token", func(t *testing.T) {
		old := guestOf(t, ns, "db-1")
		mustKubectl(t, nil, "scale", "-n", ns, "statefulset/db", "--replicas=1")
		eventually(t, guestBoot, "db-1 gone", func(ctx context.Context) (bool, string, error) {
			_, err := e.kube.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		mustKubectl(t, nil, "scale", "-n", ns, "statefulset/db", "--replicas=2")
		again(t, ns, "db-1", old, tokens, claims)
	})

	t.Run("under whenScaled Delete the claim goes after the launcher Pod", func(t *testing.T) {
		old := guestOf(t, ns, "db-1")
		mustKubectl(t, nil, "patch", "-n", ns, "statefulset/db", "--type=merge", "-p", `{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"}}}`)
		mustKubectl(t, nil, "scale", "-n", ns, "statefulset/db", "--replicas=1")
		var launcherGone time.Time
		eventually(t, guestBoot, "db-1's claim gone", func(ctx context.Context) (bool, string, error) {
			_, lerr := e.kube.CoreV1().Pods(ns).Get(ctx, old.launcher, metav1.GetOptions{})
			_, cerr := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-1", metav1.GetOptions{})
			if apierrors.IsNotFound(lerr) && launcherGone.IsZero() {
				launcherGone = time.Now()
			}
			if apierrors.IsNotFound(cerr) && !apierrors.IsNotFound(lerr) {
				t.Errorf("claim data-db-1 gone while launcher Pod %s is not (%v)", old.launcher, lerr)
				return true, "", nil
			}
			return apierrors.IsNotFound(cerr), fmt.Sprintf("launcher: %v; claim: %v", lerr, cerr), nil
		})
		t.Logf("claim data-db-1 gone %s after its launcher Pod", time.Since(launcherGone).Round(time.Second))
	})
}

// guest is what a replica's VM runs in: its agent Pod, VMI, launcher Pod
// and claim, and what its console said.
type guest struct {
	pod      types.UID
	vmi      types.UID
	launcher string
	claim    types.UID
	console  string
}

// guestOf reads agent Pod pod's guest, which must be running.
func guestOf(t *testing.T, ns, pod string) guest {
	t.Helper()
	ctx := context.Background()
	p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, derive.Name("guest-disk", pod, p.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the VMI of Pod %s: %v", pod, err)
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		t.Fatalf("VMI %s is %s, want Running", vmi.Name, vmi.Status.Phase)
	}
	claim, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(vmi.Spec.Volumes, func(v kubevirtv1.Volume) bool { return v.Name == "data" })
	if i < 0 {
		t.Fatalf("VMI %s has no volume data, want one of claim %s", vmi.Name, claim.Name)
	}
	if v := vmi.Spec.Volumes[i]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim.Name {
		t.Fatalf("VMI %s's volume data is %+v, want claim %s", vmi.Name, v.VolumeSource, claim.Name)
	}
	launcher := launcherOf(t, vmi).Name
	console := mustKubectl(t, nil, "logs", "-n", ns, launcher, "-c", "guest-console-log")
	return guest{pod: p.UID, vmi: vmi.UID, launcher: launcher, claim: claim.UID, console: console}
}

// token is the token the guest's console says it marked its disk with
// (how: "written to") or found on it ("found on").
func (g guest) token(t *testing.T, how string) string {
	t.Helper()
	for _, l := range strings.Split(g.console, "\n") {
		if _, rest, ok := strings.Cut(l, "vmctl-guest: token "); ok {
			token, said, _ := strings.Cut(strings.TrimSpace(rest), " ")
			if !strings.HasPrefix(said, how) {
				t.Fatalf("the guest says its token %s was %q, want %q", token, said, how)
			}
			return token
		}
	}
	t.Fatalf("the guest's console says nothing of a token:\n%s", g.console)
	return ""
}

// again waits for replica pod's next guest, after old, and checks that it
// is a new VMI in a new launcher Pod, on the claim of the same UID, that
// found the token the replica's first guest wrote.
func again(t *testing.T, ns, pod string, old guest, tokens map[string]string, claims map[string]types.UID) {
	t.Helper()
	start := time.Now()
	var g guest
	eventually(t, guestBoot, "a new guest of "+pod+" up", func(ctx context.Context) (bool, string, error) {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil || p.UID == old.pod || !podReady(p) {
			return false, fmt.Sprintf("Pod %s: %v", pod, err), nil
		}
		g = guestOf(t, ns, pod)
		return true, "", nil
	})
	if g.vmi == old.vmi || g.launcher == old.launcher {
		t.Errorf("%s's VMI %s in launcher %s, want new ones", pod, g.vmi, g.launcher)
	}
	if g.claim != claims[pod] {
		t.Errorf("%s's claim has UID %s, want %s: the same claim", pod, g.claim, claims[pod])
	}
	if got := g.token(t, "found on"); got != tokens[pod] {
		t.Errorf("%s's guest found token %s, want %s, which its first guest wrote", pod, got, tokens[pod])
	}
	t.Logf("%s's guest up again %s later, with token %s", pod, time.Since(start).Round(time.Second), tokens[pod])
}

// localVolumes makes a WaitForFirstConsumer StorageClass of static local
// volumes and n volumes of it of mode on the real node, each a directory
// of the node's (node.VolumeDir) or a block device (node.VolumeDevice).
func localVolumes(t *testing.T, ns string, n int, mode corev1.PersistentVolumeMode) string {
	t.Helper()
	class := "local-" + ns
	volumes := make([]testcluster.StaticVolume, n)
	for i := range volumes {
		name := fmt.Sprintf("%s-%d", class, i)
		var path string
		var err error
		if mode == corev1.PersistentVolumeBlock {
			path, err = e.node.VolumeDevice(name, 64<<20)
		} else {
			path, err = e.node.VolumeDir(name)
		}
		if err != nil {
			t.Fatal(err)
		}
		volumes[i] = testcluster.StaticVolume{Size: resource.MustParse("64Mi"), Mode: mode,
			Source: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}}, Node: e.node.Name}
	}
	testcluster.StaticVolumes(t, e.kube, class, storagev1.VolumeBindingWaitForFirstConsumer, volumes...)
	return class
}
