package metricsserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// toolsModuleRel is the tools module that pins metrics-server, relative to
// the repository root. It is a module of its own: metrics-server v0.8.0
// needs the k8s.io libraries of Kubernetes 1.33, the control plane's tools
// module those of 1.36.
const toolsModuleRel = "internal/testcluster/metricsserver/tools"

// Name is metrics-server's command, and the name of its log in the cluster's
// Dir (testcluster.Cluster.LogFile).
const Name = "metrics-server"

// estimate is what the build took on the 2-core machine, its modules
// downloaded, while another cluster ran: 5m33s (5m15s of CPU). None of the
// control plane's packages in Go's build cache is at metrics-server's
// versions, so it compiles its k8s.io libraries once more.
const estimate = "about 5 minutes on 2 cores"

// EnsureBinary builds metrics-server from its tools module into
// cacheDir/metrics-server/<hash>/bin (see testcluster.CachedBuild), so it
// rebuilds only when the tools module changes, and returns its path.
// cacheDir "" means <repo>/.cache/testcluster. Progress goes to progress
// (nil discards it).
func EnsureBinary(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	return ensureBinary(ctx, cacheDir, 0, progress)
}

// EnsureBinaryBeside is EnsureBinary building at the lowest priority
// (nice 19), beside work it must not slow: `make demo` builds
// metrics-server so from its start, while the cluster starts and the first
// steps of the walkthrough run, which need the CPU promptly.
func EnsureBinaryBeside(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	return ensureBinary(ctx, cacheDir, 19, progress)
}

func ensureBinary(ctx context.Context, cacheDir string, nice int, progress io.Writer) (string, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "testcluster")
	}
	cmd := testcluster.Command{Name: Name, Pkg: "sigs.k8s.io/metrics-server/cmd/metrics-server"}
	dir, err := testcluster.CachedBuild(ctx, filepath.Join(cacheDir, Name), toolsDir, "component "+cmd.Name+" "+cmd.Pkg, Name, progress, func(dir string) error {
		if progress != nil {
			at := ""
			if nice != 0 {
				at = fmt.Sprintf(", at nice %d", nice)
			}
			_, _ = fmt.Fprintf(progress, "building %s (%s%s) into %s...\n", Name, estimate, at, dir)
		}
		return testcluster.BuildCommandsNiced(ctx, nice, toolsDir, filepath.Join(dir, "bin"), []testcluster.Command{cmd}, "")
	})
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", Name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s built into %s but missing (%w); remove that directory and retry", Name, dir, err)
	}
	return bin, nil
}
