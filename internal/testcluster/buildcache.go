package testcluster

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
	"strings"
	"time"
)

// CachedBuild returns cacheDir/<hash>, running build into that directory
// first unless an earlier run completed it. The hash covers the tools module's
// go.mod and go.sum (in toolsDir), key (what else shapes the output, such as
// link flags) and the platform, so a build reruns only when one of those
// changes. A file lock keeps concurrent callers from building twice; older
// builds in cacheDir are removed once a new one completes. what names the
// build in progress messages (nil progress discards them).
func CachedBuild(ctx context.Context, cacheDir, toolsDir, key, what string, progress io.Writer, build func(dir string) error) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	hash, err := toolsHash(toolsDir, key)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, hash)
	if buildComplete(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create the binary cache: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, ".lock"), func() {
		_, _ = fmt.Fprintf(progress, "waiting for another process building the %s...\n", what)
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have finished the build while we waited.
	if buildComplete(dir) {
		return dir, nil
	}
	start := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clear the old build: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the build directory: %w", err)
	}
	if err := build(dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, completeMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("mark the build complete: %w", err)
	}
	_, _ = fmt.Fprintf(progress, "%s built in %s\n", what, time.Since(start).Round(time.Second))
	pruneOtherBuilds(cacheDir, hash)
	return dir, nil
}

// GoBuild builds pkg, as the tools module in toolsDir pins it, into output.
// The tools module's go.sum is complete, so -mod=readonly; the checksum
// database lacks k8s.io/kubernetes (GONOSUMDB), and VCS stamps would only make
// the build depend on git. env adds variables (e.g. CGO_ENABLED=0).
func GoBuild(ctx context.Context, toolsDir, output, pkg string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, args...), "-o", output, pkg)...)
	cmd.Dir = toolsDir
	cmd.Env = append(toolsEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", pkg, toolsDir, err, out)
	}
	return nil
}

func toolsEnv() []string {
	return append(os.Environ(), "GONOSUMDB=k8s.io", "GOWORK=off",
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly -buildvcs=false"))
}

// toolsHash names a build by what determines its output.
func toolsHash(toolsDir, key string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(toolsDir, f))
		if err != nil {
			return "", fmt.Errorf("read the tools module: %w", err)
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	_, _ = fmt.Fprintf(h, "%s\n%s/%s\n", key, runtime.GOOS, runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// completeMarker is written last, so a directory without it is a build that
// was interrupted.
const completeMarker = ".complete"

func buildComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeMarker))
	return err == nil
}

// pruneOtherBuilds removes builds for older tools modules; they are large.
func pruneOtherBuilds(cacheDir, keep string) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != keep && len(e.Name()) == len(keep) {
			_ = os.RemoveAll(filepath.Join(cacheDir, e.Name()))
		}
	}
}
