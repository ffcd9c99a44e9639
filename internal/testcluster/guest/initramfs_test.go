package guest

import (
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

func TestInitramfsEntries(t *testing.T) {
	mods := []module{
		{Name: "virtio_ring", File: "/x/kernel/drivers/virtio/virtio_ring.ko", Data: []byte("ring")},
		{Name: "virtio_net", File: "/x/kernel/drivers/net/virtio_net.ko", Data: []byte("net")},
	}
	entries := initramfsEntries([]byte("busybox"), mods)
	byName := map[string]cpioEntry{}
	for _, e := range entries {
		if _, ok := byName[e.Name]; ok {
			t.Errorf("%s is in the initramfs twice", e.Name)
		}
		// The kernel's unpacker creates no parent folders.
		if dir := path.Dir(e.Name); dir != "." && byName[dir].Mode&0o170000 != typeDir {
			t.Errorf("%s comes before its folder %s", e.Name, dir)
		}
		byName[e.Name] = e
	}
	for _, tc := range []struct {
		name string
		mode uint32
		data string
	}{
		{"init", typeRegular | 0o755, string(initScript)},
		{"bin/busybox", typeRegular | 0o755, "busybox"},
		{"bin/sh", typeSymlink | 0o777, "busybox"},
		{"etc/udhcpc.sh", typeRegular | 0o755, string(udhcpcScript)},
		{"etc/acpi/PWRF/00000080", typeRegular | 0o755, string(powerScript)},
		{"etc/modules", typeRegular | 0o644, "virtio_ring.ko\nvirtio_net.ko\n"},
		{"lib/modules/virtio_ring.ko", typeRegular | 0o644, "ring"},
		{"lib/modules/virtio_net.ko", typeRegular | 0o644, "net"},
		{"www", typeDir | 0o755, ""},
		{"www/cgi-bin/busy", typeRegular | 0o755, string(busyScript)},
		{"www/cgi-bin/idle", typeRegular | 0o755, string(idleScript)},
	} {
		e, ok := byName[tc.name]
		if !ok || e.Mode != tc.mode || string(e.Data) != tc.data {
			t.Errorf("%s: present %t, mode %o, %d bytes; want mode %o and %d bytes", tc.name, ok, e.Mode, len(e.Data), tc.mode, len(tc.data))
		}
	}
	if c := byName["dev/console"]; c.Mode != typeChar|0o600 || c.Major != 5 || c.Minor != 1 {
		t.Errorf("dev/console: mode %o %d:%d, want a character device 5:1", c.Mode, c.Major, c.Minor)
	}
}

// TestScriptsParse checks the guest's scripts with the machine's sh -n, as a
// syntax error would only show once a guest boots.
func TestScriptsParse(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		ci.Skip(t, "no sh")
	}
	for name, script := range map[string][]byte{"init.sh": initScript, "udhcpc.sh": udhcpcScript, "power.sh": powerScript, "busy.sh": busyScript, "idle.sh": idleScript} {
		if !strings.HasPrefix(string(script), "#!/bin/sh\n") {
			t.Errorf("%s does not start with #!/bin/sh, the initramfs's only shell", name)
		}
		cmd := exec.Command(sh, "-n")
		cmd.Stdin = strings.NewReader(string(script))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", name, err, out)
		}
	}
}
