//go:build linux

package node

import (
	"os"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// A block volume is a loop device over a file under the node's Dir, and
// the node's cleanup detaches it; a loop device of another file stays.
func TestVolumeDeviceIsDetachedByCleanup(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "loop devices need root")
	}
	n := &Node{Dir: t.TempDir()}
	dev, err := n.VolumeDevice("vol", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.CreateTemp(t.TempDir(), "not-the-nodes-*.img")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	out, err := run("losetup", "--find", "--show", other.Name())
	if err != nil {
		t.Fatal(err)
	}
	otherDev := strings.TrimSpace(out)
	defer func() { _, _ = run("losetup", "--detach", otherDev) }()

	if err := detachLoopsUnder(n.Dir); err != nil {
		t.Fatal(err)
	}
	list, err := run("losetup", "--list", "--noheadings", "--raw", "--output", "NAME")
	if err != nil {
		t.Fatal(err)
	}
	attached := strings.Fields(list)
	for _, d := range attached {
		if d == dev {
			t.Errorf("%s, the node's volume, is still attached", dev)
		}
	}
	found := false
	for _, d := range attached {
		found = found || d == otherDev
	}
	if !found {
		t.Errorf("%s, over a file outside the node's Dir, was detached", otherDev)
	}
}
