package testcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CachedBuild returns cacheDir/<hash>, running build into that directory
// first unless an earlier run completed it. The hash covers the tools module's
// go.mod and go.sum (in toolsDir), key (what else shapes the output, such as
// link flags), BuildCommands' flags and the platform, so a build reruns only when one of those
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

// Command is a main package to build and the name its binary gets.
type Command struct {
	Name string
	Pkg  string // Go package path, or a directory relative to the module
}

// BuildCommands builds cmds, as the tools module in toolsDir pins them, into
// binDir in one `go build`. One build of several commands compiles the
// packages they share once, and overlaps one command's link with another's
// compile; on 2 cores that is faster than building them one after another.
//
// Every harness build uses the flags of `make build`: CGO_ENABLED=0, -trimpath
// and -ldflags "-s -w" (no symbol table or DWARF: the links of these large
// commands are faster without, and running them does not need them), then
// ldflags. As the flags agree, what kubectl-vmctl shares with the control
// plane (client-go, k8s.io/api) comes from the Go build cache. The tools
// module's go.sum is complete, so -mod=readonly; the checksum database lacks
// k8s.io/kubernetes (GONOSUMDB), and VCS stamps would only make the build
// depend on git. flags go to `go build` before the packages, such as
// -modfile and -tags for a tools module that builds against more than one
// go.mod.
func BuildCommands(ctx context.Context, toolsDir, binDir string, cmds []Command, ldflags string, flags ...string) error {
	return buildCommands(ctx, false, 0, toolsDir, binDir, cmds, ldflags, flags...)
}

// BuildCommandsNiced is BuildCommands at nice's adjustment nice, for a
// build that runs beside work it must not slow: at 19 it takes only the
// CPU that work leaves.
func BuildCommandsNiced(ctx context.Context, nice int, toolsDir, binDir string, cmds []Command, ldflags string, flags ...string) error {
	return buildCommands(ctx, false, nice, toolsDir, binDir, cmds, ldflags, flags...)
}

// BuildCgoCommands is BuildCommands with cgo: for commands that link C
// libraries, such as KubeVirt's virt-launcher (libvirt), built against the
// machine's headers and libraries.
func BuildCgoCommands(ctx context.Context, toolsDir, binDir string, cmds []Command, ldflags string, flags ...string) error {
	return buildCommands(ctx, true, 0, toolsDir, binDir, cmds, ldflags, flags...)
}

func buildCommands(ctx context.Context, cgo bool, nice int, toolsDir, binDir string, cmds []Command, ldflags string, flags ...string) error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("create the build directory: %w", err)
	}
	args := append([]string{"build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w " + ldflags), "-o", binDir + string(filepath.Separator)}, flags...)
	for _, c := range cmds {
		args = append(args, c.Pkg)
	}
	argv := append([]string{"go"}, args...)
	if nice != 0 {
		argv = append([]string{"nice", "-n", strconv.Itoa(nice)}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = toolsDir
	cmd.Env = append(toolsEnv(), "CGO_ENABLED=0")
	if cgo {
		cmd.Env[len(cmd.Env)-1] = "CGO_ENABLED=1"
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build %s: %w", strings.Join(names(cmds), ", "), ctx.Err())
		}
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), toolsDir, err, out)
	}
	for _, c := range cmds {
		if n := execName(c.Pkg); n != c.Name {
			if err := os.Rename(filepath.Join(binDir, n), filepath.Join(binDir, c.Name)); err != nil {
				return fmt.Errorf("name the binary of %s: %w", c.Pkg, err)
			}
		}
	}
	return nil
}

func names(cmds []Command) []string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.Name)
	}
	return n
}

// buildFlags names what BuildCommands passes besides ldflags; the hash of a
// cached build covers it.
const buildFlags = "CGO_ENABLED=0 -trimpath -ldflags=-s -w"

// execName is the name go build gives the binary of package pkg: its last
// path element, or the one before when that is a major version (v2, v3...).
func execName(pkg string) string {
	elem := path.Base(pkg)
	if elem != pkg && isMajorVersion(elem) {
		elem = path.Base(path.Dir(pkg))
	}
	return elem
}

func isMajorVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' {
		return false
	}
	for _, r := range s[2:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
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
	_, _ = fmt.Fprintf(h, "%s\n%s\n%s/%s\n", key, buildFlags, runtime.GOOS, runtime.GOARCH)
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
