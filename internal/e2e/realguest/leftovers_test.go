//go:build e2e

package realguest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// nothingLeftOf checks that nothing of a VMI that stopped is left on the
// machine: no qemu of it, no mount of its Pods' volumes, no cgroup of its
// Pods.
func nothingLeftOf(t *testing.T, ns, vmi string, pods ...types.UID) {
	t.Helper()
	// libvirt names the domain <namespace>_<name>; qemu's -name carries it.
	domain := "guest=" + ns + "_" + vmi
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(args, "qemu-system") && strings.Contains(args, domain) {
			t.Errorf("qemu of VMI %s still runs: %s: %.200s", vmi, filepath.Dir(p), args)
		}
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range pods {
		for _, line := range strings.Split(string(mountinfo), "\n") {
			if strings.Contains(line, string(uid)) {
				t.Errorf("a mount of Pod %s is left: %s", uid, line)
			}
		}
		for _, c := range podCgroups(t, uid) {
			t.Errorf("a cgroup of Pod %s is left: %s", uid, c)
		}
	}
}

// podCgroups lists the cgroups of Pod uid under the node's cgroup root, in
// every hierarchy the machine mounts, v1's controllers and v2's unified one,
// as the harness finds them (node.CgroupHierarchies): the kubelet's
// cgroupfs names them pod<uid>, under a QoS class's cgroup or not. It fails
// t where it finds no hierarchy holding the node's cgroup root, as it could
// find no leftover there either.
func podCgroups(t *testing.T, uid types.UID) []string {
	t.Helper()
	var found []string
	roots := 0
	for _, h := range node.CgroupHierarchies() {
		root := filepath.Join(h, node.CgroupRoot)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		roots++
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "pod"+string(uid) {
				found = append(found, p)
			}
			return nil
		})
	}
	if roots == 0 {
		t.Fatalf("no cgroup hierarchy of %v holds the node's cgroup root %s: cannot look for the cgroups Pod %s left", node.CgroupHierarchies(), node.CgroupRoot, uid)
	}
	return found
}
