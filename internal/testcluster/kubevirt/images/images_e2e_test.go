//go:build e2e

// An external test package: it may import package kubevirt, which builds the
// commands, whatever kubevirt imports of this package.
package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt/images"
)

// binDirEnv names a directory of KubeVirt v1.7.0's commands built for
// Debian 12 (kubevirt.NodeCommands), to build the images of instead of those of
// kubevirt.EnsureNodeSide.
const binDirEnv = "VMCTL_KUBEVIRT_NODE_BIN"

// TestImages builds the images (or takes them from the cache), unpacks
// their layer as a runtime would, and runs their parts in it: the virtqemud
// shim answering virsh as node-labeller.sh (root) and virt-launcher (uid
// 107) use it, qemu under TCG, KubeVirt's commands with their libraries. No
// /dev/kvm ever enters the tree: qemu runs under TCG.
func TestImages(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "building and running the images needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	node := nodeSide(ctx, t)
	imgs, err := images.Ensure(ctx, node.Version, node.Source, node.Bin, "", testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	layer := checkTarball(t, imgs)
	unpackLayer(t, imgs.Tarball, layer, rootfs)
	checkFiles(t, rootfs)

	// The checks run in a mount and PID namespace of their own: the
	// daemons they start end with it, and its mounts go with it.
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--fork", "--pid", "--mount-proc", "sh", "-c", partsScript, "parts", rootfs, strings.Join(kubevirt.NodeCommands, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the images' parts: %v\n%s", err, out)
	}
	for _, want := range []string{
		"ok: no /dev/kvm",
		"ok: users qemu 107:107 and libvirt-qemu",
		"ok: node-labeller.sh on PATH",
		"ok: libraries of " + strings.Join(kubevirt.NodeCommands, " "),
		"ok: virt-launcher --help",
		"ok: virt-handler --help",
		"ok: virt-launcher-monitor cap_net_bind_service=ep",
		"ok: root virsh domcapabilities qemu",
		"ok: root virsh hypervisor-cpu-baseline",
		"ok: uid 107 virsh domcapabilities qemu",
		"ok: qemu tcg running",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("the images' parts did not say %q:\n%s", want, out)
		}
	}
}

// nodeSide is KubeVirt's commands for the images: binDirEnv's, or the
// harness's build of them.
func nodeSide(ctx context.Context, t *testing.T) kubevirt.NodeSide {
	bin := os.Getenv(binDirEnv)
	if bin == "" {
		node, err := kubevirt.EnsureNodeSide(ctx, kubevirt.NodeRelease, "", testWriter{t})
		if err != nil {
			t.Fatal(err)
		}
		return node
	}
	const version = "v1.7.0"
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "kubevirt.io", "kubevirt@"+version)
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("no KubeVirt %s source for the commands of %s in the module cache: %v", version, binDirEnv, err)
	}
	return kubevirt.NodeSide{Version: version, Bin: bin, Source: src}
}

// manifestEntry is an image of manifest.json in docker save's format.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// checkTarball checks that the tarball holds both images under KubeVirt's
// names, with one shared layer and their commands as entrypoints, and
// returns the layer's name in it.
func checkTarball(t *testing.T, imgs images.Images) string {
	files := tarFiles(t, imgs.Tarball, func(name string) bool { return !strings.HasSuffix(name, ".tar.gz") })
	var manifest []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	want := map[string]string{imgs.Launcher: "/usr/bin/virt-launcher", imgs.Handler: "/usr/bin/virt-handler"}
	var layers []string
	for _, m := range manifest {
		if len(m.RepoTags) != 1 || want[m.RepoTags[0]] == "" || len(m.Layers) != 1 {
			t.Fatalf("image %+v: want one of %v with one layer", m, want)
		}
		var cf struct {
			Config struct {
				Entrypoint []string
				User       string
				Env        []string
			} `json:"config"`
		}
		if err := json.Unmarshal(files[m.Config], &cf); err != nil {
			t.Fatalf("config of %s: %v", m.RepoTags[0], err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{want[m.RepoTags[0]]}) || cf.Config.User != "" || len(cf.Config.Env) == 0 {
			t.Errorf("config of %s: %+v, want entrypoint %s, user root and a PATH", m.RepoTags[0], cf.Config, want[m.RepoTags[0]])
		}
		delete(want, m.RepoTags[0])
		layers = append(layers, m.Layers[0])
	}
	if len(want) > 0 || len(layers) != 2 || layers[0] != layers[1] {
		t.Fatalf("images %+v: want %s and %s sharing one layer", manifest, imgs.Launcher, imgs.Handler)
	}
	return layers[0]
}

// tarFiles reads the files of a tarball that keep says to.
func tarFiles(t *testing.T, file string, keep func(string) bool) map[string][]byte {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if keep(h.Name) {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// unpackLayer extracts layer of the tarball into dir as a runtime does:
// owners by number, modes, links and file capabilities kept.
func unpackLayer(t *testing.T, tarball, layer, dir string) {
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("find the layer %s: %v", layer, err)
		}
		if h.Name == layer {
			break
		}
	}
	cmd := exec.Command("tar", "-xzpf", "-", "--numeric-owner", "--xattrs", "--xattrs-include=security.capability", "-C", dir)
	cmd.Stdin = tr
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unpack the layer: %v\n%s", err, out)
	}
}

// checkFiles checks what the layer holds without running it.
func checkFiles(t *testing.T, rootfs string) {
	f, err := elf.Open(filepath.Join(rootfs, "usr", "bin", "container-disk"))
	if err != nil {
		t.Fatalf("container-disk: %v", err)
	}
	defer func() { _ = f.Close() }()
	if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Error("container-disk is dynamically linked; the containers it is copied into have no libc")
	}
	// KubeVirt's own files, where its images have them.
	for _, f := range []string{"/etc/libvirt/qemu.conf", "/etc/libvirt/virtqemud.conf", "/etc/nsswitch.conf", "/etc/libvirt/hooks/qemu", "/usr/bin/node-labeller.sh"} {
		got, err := os.ReadFile(filepath.Join(rootfs, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Contains(got, []byte("\n")) {
			t.Errorf("%s is empty", f)
		}
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "dev", "null")); err == nil {
		t.Error("the layer holds /dev/null; the runtime provides /dev")
	}
}

// partsScript runs in a mount and PID namespace of its own, as root, with
// the unpacked tree as $1 and KubeVirt's commands as $2. It gives the tree
// what a runtime would (/proc, /sys, /run, a /dev of a few harmless devices,
// never kvm) and says "ok:" for each part that works.
const partsScript = `
set -eu
R=$1 cmds=$2
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount -t tmpfs tmpfs "$R/run"
mount -t tmpfs -o mode=755 tmpfs "$R/dev"
for d in null zero full random urandom tty; do
	touch "$R/dev/$d"
	mount --bind "/dev/$d" "$R/dev/$d"
done
ln -s /proc/self/fd "$R/dev/fd"
for i in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${i%%:*}" "$R/dev/${i#*:}"; done
[ ! -e "$R/dev/kvm" ] && echo "ok: no /dev/kvm"
tree() { chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

[ "$(tree id qemu)" = "uid=107(qemu) gid=107(qemu) groups=107(qemu)" ] && tree id libvirt-qemu >/dev/null && echo "ok: users qemu 107:107 and libvirt-qemu"
[ "$(tree sh -c 'command -v node-labeller.sh')" = /usr/bin/node-labeller.sh ] && echo "ok: node-labeller.sh on PATH"
for c in $cmds; do
	# ldd fails where the tree has none, or the command is missing; of its
	# failures only a static binary's passes.
	libs=$(tree ldd "/usr/bin/$c" 2>&1) || case $libs in
		*'not a dynamic executable'*) ;;
		*) echo "$c: ldd failed: $libs"; exit 1 ;;
	esac
	if echo "$libs" | grep 'not found'; then echo "$c: libraries missing"; exit 1; fi
done
echo "ok: libraries of $cmds"
# Their pflag exits 2 on --help: the usage shows they run.
tree virt-launcher --help 2>&1 | grep -q -- '--allow-emulation' && echo "ok: virt-launcher --help"
tree virt-handler --help 2>&1 | grep -q '^Usage of .*virt-handler:' && echo "ok: virt-handler --help"
tree getcap /usr/bin/virt-launcher-monitor | grep -q 'cap_net_bind_service=ep' && echo "ok: virt-launcher-monitor cap_net_bind_service=ep"

# As node-labeller.sh does, as root.
tree virtqemud -d
caps=$(tree virsh domcapabilities --machine q35 --arch x86_64 --virttype qemu)
echo "$caps" | grep -q '<domain>qemu</domain>' && echo "ok: root virsh domcapabilities qemu"
echo "$caps" | tree virsh hypervisor-cpu-baseline --features /dev/stdin --machine q35 --arch x86_64 --virttype qemu | grep -q '<model' && echo "ok: root virsh hypervisor-cpu-baseline"
kill "$(cat "$R/run/libvirtd.pid")"
while [ -e "$R/run/libvirtd.pid" ]; do sleep 0.2; done
rm -rf "$R/run/libvirt"

# As a non-root virt-launcher does: uid 107, its XDG directories, its copy
# of virtqemud.conf, its URI.
mkdir -p "$R/run/libvirt" "$R/run/kubevirt-private/libvirt"
cp "$R/etc/libvirt/virtqemud.conf" "$R/run/libvirt/"
cp "$R/etc/libvirt/qemu.conf" "$R/run/kubevirt-private/libvirt/"
chown -R 107:107 "$R/run/libvirt" "$R/run/kubevirt-private"
as107() {
	tree XDG_RUNTIME_DIR=/var/run XDG_CONFIG_HOME=/var/run/kubevirt-private XDG_CACHE_HOME=/var/run/kubevirt-private \
		setpriv --reuid 107 --regid 107 --clear-groups "$@"
}
as107 sh -c 'virtqemud -f /var/run/libvirt/virtqemud.conf 2>/tmp/virtqemud.log &
	i=0; until [ -S /var/run/libvirt/virtqemud-sock ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i+1)); done
	virsh -c "qemu+unix:///session?socket=/var/run/libvirt/virtqemud-sock" domcapabilities --machine q35 --arch x86_64 --virttype qemu' |
	grep -q '<domain>qemu</domain>' && echo "ok: uid 107 virsh domcapabilities qemu"

printf 'info status\nquit\n' | as107 qemu-system-x86_64 -accel tcg -machine q35 -nodefaults -display none -monitor stdio |
	grep -q 'VM status: running' && echo "ok: qemu tcg running"
`

// testWriter sends progress lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
