package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// cniBinDirs are where the OS's CNI plugins may be: Debian's
// containernetworking-plugins, then the upstream tarball's place.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func findCNIBinDir() (string, error) {
	for _, d := range cniBinDirs {
		ok := true
		for _, p := range []string{"bridge", "host-local", "loopback"} {
			if _, err := os.Stat(filepath.Join(d, p)); err != nil {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", fmt.Errorf("no CNI plugins (bridge, host-local, loopback) in %s; run hack/node-deps.sh (apt-get install containernetworking-plugins)", strings.Join(cniBinDirs, " or "))
}

// containerdConfig is containerd's whole configuration: everything it keeps
// under the node's directory, no machine-wide plugin (NRI's socket, /opt),
// and the CRI settings this machine needs.
func containerdConfig(dir, runc, cniBin string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.differ.v1.erofs",
  "io.containerd.image-verifier.v1.bindir",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]
imports = []

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins.'io.containerd.shim.v1.manager']
  socket_dir = %[5]q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[6]q

[plugins.'io.containerd.cri.v1.runtime']
  # This sandbox cannot lower oom_score_adj: without this every Pod sandbox
  # fails with runc's "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[7]q
        Root = %[8]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[9]q]
    conf_dir = %[10]q
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`,
		filepath.Join(dir, "containerd", "root"),
		filepath.Join(dir, "containerd", "state"),
		socketPath(dir),
		socketPath(dir)+".ttrpc",
		filepath.Join(dir, "s"),
		PauseImage,
		runc,
		filepath.Join(dir, "runc"),
		cniBin,
		filepath.Join(dir, "cni", "net.d"),
	)
}

func socketPath(dir string) string { return filepath.Join(dir, "containerd.sock") }

// startContainerd writes the config, starts containerd and waits for its
// socket to answer.
func (n *Node) startContainerd(ctx context.Context) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("no runc on PATH; run hack/node-deps.sh (apt-get install runc): %w", err)
	}
	cniBin, err := findCNIBinDir()
	if err != nil {
		return err
	}
	// containerd refuses shim socket folders longer than this: a socket's
	// path is at most 107 bytes and the shim adds a 64-byte hash.
	if s := filepath.Join(n.Dir, "s"); len(s) > 42 {
		return fmt.Errorf("the node's directory %s is too long for containerd's shim sockets (%s must be at most 42 bytes); start the cluster with a shorter Dir or TMPDIR", n.Dir, s)
	}
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(n.Dir, runc, cniBin)), 0o644); err != nil {
		return err
	}
	binary, args := n.bins.Containerd, []string{"--config", cfg, "--log-level", "info"}
	if n.ownPIDNamespace {
		// containerd is PID 1 of a PID namespace of its own, and so of every
		// hostPID Pod's: unshare forks it there, with a /proc of that
		// namespace in a mount namespace of its own (mounts under the node's
		// shared directory still propagate both ways), and kills it when
		// unshare dies.
		binary, args = "unshare", append([]string{"--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "unchanged", "--", binary}, args...)
	}
	d, err := n.start("containerd", binary, args...)
	if err != nil {
		return err
	}
	return testcluster.WaitFor(ctx, "containerd", []*testcluster.Process{d}, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, err
	})
}

// ctr runs ctr against the node's containerd in the Kubernetes namespace.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, n.bins.Ctr, append([]string{"--address", socketPath(n.Dir), "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // warnings, e.g. cgroup v1's deprecation
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// ImportImage imports an image tarball (docker save or OCI layout, as `make
// image` and hack/image write them) under the names it holds, for the kubelet
// to run without pulling. Any locally built image works this way, e.g. a
// stand-in for an image that cannot be pulled here.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	if _, err := os.Stat(tarball); err != nil {
		return fmt.Errorf("import image: %w", err)
	}
	if _, err := n.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("import image %s: %w", tarball, err)
	}
	n.logf("imported %s", filepath.Base(tarball))
	return nil
}

// ContainerPID returns the host PID of a container's first process, by the
// ID in its Pod's status (with or without the containerd:// prefix).
func (n *Node) ContainerPID(ctx context.Context, containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := n.ctr(ctx, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			var pid int
			if _, err := fmt.Sscan(f[1], &pid); err != nil || pid <= 0 {
				return 0, fmt.Errorf("container %s: no PID in %q", id, line)
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("container %s is not running on node %s", id, n.Name)
}
