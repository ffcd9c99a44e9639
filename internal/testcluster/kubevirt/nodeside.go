package kubevirt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// NodeSide locates KubeVirt's node-side commands of a release, built with
// cgo against the machine's libvirt (Debian's libvirt-dev, which
// hack/node-deps.sh installs): what KubeVirt's virt-handler and
// virt-launcher images hold.
type NodeSide struct {
	// Version is the KubeVirt release built, such as v1.7.0.
	Version string
	// Bin holds the commands, named as in KubeVirt's images (NodeCommands).
	Bin string
	// Source is the release's module source, for what KubeVirt ships
	// beside its commands (node-labeller.sh, the container-disk C program).
	Source string
}

// NodeCommands are the commands EnsureNodeSide builds: virt-handler and
// virt-chroot for virt-handler's image, the rest for virt-launcher's.
var NodeCommands = []string{"virt-handler", "virt-chroot", "virt-launcher", "virt-launcher-monitor", "virt-probe", "virt-tail", "virt-freezer"}

// NodeRelease is the release whose node side the harness builds: v1.8.0's
// virt-launcher imports libguestfs.org/libnbd, which the module proxy here
// refuses, so the real node runs v1.7.0 from end to end.
var NodeRelease = Oldest

// nodeSideEstimate is what the build takes on 2 cores: most of its packages
// are the release's virt-api's, built with the same flags (Release.Cgo).
const nodeSideEstimate = "about 3 minutes on 2 cores after the release's own build, 9 with empty Go caches"

// EnsureNodeSide builds r's node-side commands once into
// cacheDir/<version>-node/<hash> (testcluster.CachedBuild). cacheDir ""
// means <repo>/.cache/kubevirt.
func EnsureNodeSide(ctx context.Context, r Release, cacheDir string, progress io.Writer) (NodeSide, error) {
	if progress == nil {
		progress = io.Discard
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return NodeSide{}, err
	}
	version, err := r.Version()
	if err != nil {
		return NodeSide{}, err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "kubevirt")
	}
	key := fmt.Sprintf("cgo tags=%s commands=%s\n", r.Tags, strings.Join(NodeCommands, ","))
	for _, f := range []string{r.ModFile, r.sumFile()} {
		data, err := os.ReadFile(filepath.Join(toolsDir, f))
		if err != nil {
			return NodeSide{}, fmt.Errorf("read the KubeVirt tools module: %w", err)
		}
		key += fmt.Sprintf("%s %d\n%s", f, len(data), data)
	}
	what := "KubeVirt " + version + "'s node side"
	dir, err := testcluster.CachedBuild(ctx, filepath.Join(cacheDir, version+"-node"), toolsDir, key, what, progress, func(dir string) error {
		start := time.Now()
		_, _ = fmt.Fprintf(progress, "building %s: %s with cgo (%s) into %s...\n", what, strings.Join(NodeCommands, ", "), nodeSideEstimate, dir)
		var cmds []testcluster.Command
		for _, c := range NodeCommands {
			cmds = append(cmds, testcluster.Command{Name: c, Pkg: "kubevirt.io/kubevirt/cmd/" + c})
		}
		if err := testcluster.BuildCgoCommands(ctx, toolsDir, filepath.Join(dir, "bin"), cmds, "", "-modfile="+r.ModFile, "-tags="+r.Tags); err != nil {
			return fmt.Errorf("%w\n(the build needs libvirt's headers: run hack/node-deps.sh)", err)
		}
		_, _ = fmt.Fprintf(progress, "  built %s in %s\n", what, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		return NodeSide{}, err
	}
	n := NodeSide{Version: version, Bin: filepath.Join(dir, "bin")}
	for _, c := range NodeCommands {
		if _, err := os.Stat(filepath.Join(n.Bin, c)); err != nil {
			return NodeSide{}, fmt.Errorf("%s built into %s but incomplete (%w); remove that directory and retry", what, dir, err)
		}
	}
	if n.Source, err = moduleSource(ctx, toolsDir, r); err != nil {
		return NodeSide{}, err
	}
	return n, nil
}

// moduleSource is the directory of r's kubevirt.io/kubevirt in the module cache.
func moduleSource(ctx context.Context, toolsDir string, r Release) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-modfile="+r.ModFile, "-m", "-f", "{{.Dir}}", "kubevirt.io/kubevirt")
	cmd.Dir = toolsDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find KubeVirt's source: %w%s", err, stderrOf(err))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("kubevirt.io/kubevirt of %s is not downloaded: run go mod download in %s", r.ModFile, toolsDir)
	}
	return dir, nil
}
