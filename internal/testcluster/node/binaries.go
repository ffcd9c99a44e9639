package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// PauseImage is the name containerd's sandbox image goes by on the node.
const PauseImage = "vmctl.test/pause:1"

// LauncherImage is the name of the stand-in for KubeVirt's virt-launcher
// image (program virtlauncher): give it to virt-controller as its
// --launcher-image (kubevirt.Options.LauncherImage) and import
// Binaries.LauncherImage, and the node runs KubeVirt's launcher Pods.
const LauncherImage = "vmctl.test/virt-launcher:1"

// ContainerDiskImages are the containerDisk images that the repository's
// prototypes (testdata) name, which the node cannot pull here. Their stand-in
// (Binaries.ContainerDiskImage) is shaped as a containerDisk image is, one
// file under /disk, but its disk is blank: 1 MiB of zeros, no guest to boot.
// The launcher Pod runs its containers with KubeVirt's container-disk program
// from the launcher image, never a program of this image.
var ContainerDiskImages = []string{"quay.io/kubevirt/cirros-container-disk-demo:v1.6.0"}

// Binaries locates what EnsureBinaries built: the kubelet and kube-proxy,
// containerd, its runc shim, ctr, and the tarballs of the pause image and of
// the stand-ins for KubeVirt's images.
type Binaries struct {
	Kubelet    string
	KubeProxy  string
	Containerd string
	Shim       string
	Ctr        string
	PauseImage string // a tarball, imported as PauseImage
	// LauncherImage is a tarball, imported as LauncherImage.
	LauncherImage string
	// ContainerDiskImage is a tarball, imported as each of ContainerDiskImages.
	ContainerDiskImage string
}

const (
	toolsRel = "internal/testcluster/node/tools"
	pauseRel = "internal/testcluster/node/pause"
	// launcherRel is the stand-in for the programs of KubeVirt's launcher image.
	launcherRel = "internal/testcluster/node/virtlauncher"
	imageRel    = "hack/image"
)

// runtimeCommands are built from the tools module.
func runtimeCommands() []testcluster.Command {
	return []testcluster.Command{
		{Name: "containerd", Pkg: "github.com/containerd/containerd/v2/cmd/containerd"},
		{Name: "containerd-shim-runc-v2", Pkg: "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"},
		{Name: "ctr", Pkg: "github.com/containerd/containerd/v2/cmd/ctr"},
	}
}

// EnsureBinaries builds the node's kubelet and kube-proxy
// (testcluster.EnsureNodeBinaries), then its runtime into
// cacheDir/node-<hash>, where the hash covers the tools module, the pause
// program and the image builder, so it rebuilds only when they change.
// cacheDir "" means <repo>/.cache/testcluster. A file lock keeps concurrent
// callers from building twice.
func EnsureBinaries(ctx context.Context, cacheDir string, progress io.Writer) (Binaries, error) {
	if progress == nil {
		progress = io.Discard
	}
	kube, err := testcluster.EnsureNodeBinaries(ctx, cacheDir, progress)
	if err != nil {
		return Binaries{}, err
	}
	b, err := ensureRuntime(ctx, cacheDir, progress)
	if err != nil {
		return Binaries{}, err
	}
	b.Kubelet, b.KubeProxy = kube.Kubelet, kube.KubeProxy
	return b, nil
}

func ensureRuntime(ctx context.Context, cacheDir string, progress io.Writer) (Binaries, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "testcluster")
	}
	hash, err := inputsHash(root)
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(cacheDir, "node-"+hash)
	if b, ok := cached(dir); ok {
		return b, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("create the binary cache: %w", err)
	}
	unlock, err := flock(ctx, filepath.Join(cacheDir, ".lock-node"), func() {
		_, _ = fmt.Fprintln(progress, "waiting for another process building the node's runtime...")
	})
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if b, ok := cached(dir); ok {
		return b, nil
	}
	if err := build(ctx, root, dir, progress); err != nil {
		return Binaries{}, err
	}
	pruneOthers(cacheDir, "node-"+hash)
	b, ok := cached(dir)
	if !ok {
		return Binaries{}, fmt.Errorf("node runtime built into %s but incomplete; remove that directory and retry", dir)
	}
	return b, nil
}

func inputsHash(root string) (string, error) {
	h := sha256.New()
	var files []string
	for _, f := range []string{toolsRel + "/go.mod", toolsRel + "/go.sum", imageRel + "/go.mod", imageRel + "/go.sum"} {
		files = append(files, filepath.Join(root, f))
	}
	for _, dir := range []string{pauseRel, launcherRel, imageRel} {
		matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return "", err
		}
		files = append(files, matches...)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash the node's build inputs: %w", err)
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(f, root), len(data))
		h.Write(data)
	}
	_, _ = fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

const completeMarker = ".complete"

func cached(dir string) (Binaries, bool) {
	b := Binaries{
		Containerd:         filepath.Join(dir, "bin", "containerd"),
		Shim:               filepath.Join(dir, "bin", "containerd-shim-runc-v2"),
		Ctr:                filepath.Join(dir, "bin", "ctr"),
		PauseImage:         filepath.Join(dir, "pause.tar"),
		LauncherImage:      filepath.Join(dir, "virt-launcher.tar"),
		ContainerDiskImage: filepath.Join(dir, "container-disk.tar"),
	}
	for _, f := range []string{filepath.Join(dir, completeMarker), b.Containerd, b.Shim, b.Ctr, b.PauseImage, b.LauncherImage, b.ContainerDiskImage} {
		if _, err := os.Stat(f); err != nil {
			return Binaries{}, false
		}
	}
	return b, true
}

func build(ctx context.Context, root, dir string, progress io.Writer) error {
	start := time.Now()
	_, _ = fmt.Fprintf(progress, "building the node's containerd, shim, ctr, pause image and KubeVirt image stand-ins (about a minute on 2 cores with a cold cache) into %s...\n", dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear the old build: %w", err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off",
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly -buildvcs=false"))
	run := func(what, dir string, args ...string) error {
		t := time.Now()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: go %s in %s: %w\n%s", what, strings.Join(args, " "), dir, err, out)
		}
		_, _ = fmt.Fprintf(progress, "  built %-24s %s\n", what, time.Since(t).Round(time.Second))
		return nil
	}
	t := time.Now()
	if err := testcluster.BuildCommands(ctx, filepath.Join(root, toolsRel), bin, runtimeCommands(), ""); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(progress, "  built %-24s %s\n", "containerd, shim, ctr", time.Since(t).Round(time.Second))
	pause := filepath.Join(bin, "pause")
	if err := run("pause", root, "build", "-trimpath", "-ldflags", "-s -w", "-o", pause, "./"+pauseRel); err != nil {
		return err
	}
	// The same builder as `make image`: an empty base plus one layer.
	if err := run("pause image", filepath.Join(root, imageRel), "run", ".", "build",
		"-binary", pause, "-path", "/pause", "-user", "65535:65535",
		"-platform", "linux/"+runtime.GOARCH, "-tag", PauseImage, "-out", filepath.Join(dir, "pause.tar")); err != nil {
		return err
	}
	if err := buildKubeVirtStandIns(root, dir, run); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, completeMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(progress, "node runtime built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// buildKubeVirtStandIns builds the stand-ins for KubeVirt's launcher image
// (program virtlauncher at each path a launcher Pod runs, the image's user
// KubeVirt's non-root 107) and containerDisk image (a blank disk).
func buildKubeVirtStandIns(root, dir string, run func(what, dir string, args ...string) error) error {
	launcher := filepath.Join(dir, "bin", "virtlauncher")
	if err := run("virtlauncher", root, "build", "-trimpath", "-ldflags", "-s -w", "-o", launcher, "./"+launcherRel); err != nil {
		return err
	}
	if err := run("virt-launcher stand-in", filepath.Join(root, imageRel), "run", ".", "build",
		"-binary", launcher, "-path", "/usr/bin/virt-launcher-monitor",
		"-link", "/usr/bin/virt-tail", "-link", "/usr/bin/cp", "-link", "/usr/bin/container-disk",
		"-user", "107:107", "-platform", "linux/"+runtime.GOARCH, "-tag", LauncherImage,
		"-out", filepath.Join(dir, "virt-launcher.tar")); err != nil {
		return err
	}
	disk := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(disk, make([]byte, 1<<20), 0o644); err != nil {
		return err
	}
	defer func() { _ = os.Remove(disk) }()
	args := []string{"run", ".", "build", "-file", disk + "=/disk/disk.img", "-platform", "linux/" + runtime.GOARCH, "-out", filepath.Join(dir, "container-disk.tar")}
	for _, name := range ContainerDiskImages {
		args = append(args, "-tag", name)
	}
	return run("containerDisk stand-in", filepath.Join(root, imageRel), args...)
}

// pruneOthers removes the node runtimes built for other inputs: the
// directories named as keep is, node-<hash>, and no others (the control
// plane's and the kubelet's builds share cacheDir).
func pruneOthers(cacheDir, keep string) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != keep && len(e.Name()) == len(keep) && strings.HasPrefix(e.Name(), "node-") {
			_ = os.RemoveAll(filepath.Join(cacheDir, e.Name()))
		}
	}
}

// flock takes an exclusive lock on path, calling waiting once if another
// process holds it, until ctx ends.
func flock(ctx context.Context, path string, waiting func()) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock %s: %w", path, err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for the lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
