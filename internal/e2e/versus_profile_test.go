//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// profileEnv names a directory. With it set, BenchmarkVersusPool's scale
// case profiles kube-apiserver's CPU during each fleet's ramp (from the
// scale to N VMIs Ready), every agent profiles its own CPU for its whole
// life (--profile=cpu), and the merged profiles are written there with
// the top of each printed. Profiling costs the profiled processes some
// CPU of their own: take the CPU figures from a run without it.
const profileEnv = "VMCTL_VERSUS_PROFILE"

// agentProfileArgs are the kubelet double's extra agent flags: each agent
// writes profile.pprof in its Pod's directory (agentsDir).
func agentProfileArgs() []string {
	if os.Getenv(profileEnv) == "" {
		return nil
	}
	return []string{"--profile=cpu"}
}

// profileWindow is one CPU profile's length; a ramp is profiled in
// windows back to back until it ends.
const profileWindow = "20"

// profileAPIServer profiles kube-apiserver's CPU (its /debug/pprof) in
// windows back to back until the returned stop is called; stop waits for
// the last window and writes all of them merged as <dir>/<name>.pprof.
// Without profileEnv it does nothing.
func profileAPIServer(b testing.TB, name string) (stop func()) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := e.kube.CoreV1().RESTClient()
	var files []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			// A window runs to its end even after stop: a profile cut
			// short is lost.
			body, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", profileWindow).DoRaw(context.Background())
			if err != nil {
				fmt.Printf("versus: profile kube-apiserver: %v\n", err)
				return
			}
			f := filepath.Join(b.TempDir(), fmt.Sprintf("%s-%d.pprof", name, i))
			if err := os.WriteFile(f, body, 0o644); err != nil {
				b.Error(err)
				return
			}
			files = append(files, f)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		writeMergedProfile(b, filepath.Join(dir, name+".pprof"), files)
	}
}

// writeAgentProfiles merges the CPU profiles the agents of ns wrote as
// they exited into <dir>/<name>.pprof. Without profileEnv it does nothing.
func writeAgentProfiles(b testing.TB, ns, name string) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return
	}
	files, err := filepath.Glob(filepath.Join(agentsDir(ns), "*", "profile.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	writeMergedProfile(b, filepath.Join(dir, name+".pprof"), files)
}

// writeMergedProfile merges profiles into out with `go tool pprof` and
// prints the top of it, by flat and by cumulative CPU.
func writeMergedProfile(b testing.TB, out string, profiles []string) {
	if len(profiles) == 0 {
		fmt.Printf("versus: no profiles for %s\n", out)
		return
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		b.Fatal(err)
	}
	merge := exec.Command("go", append([]string{"tool", "pprof", "-proto", "-output", out}, profiles...)...)
	if msg, err := merge.CombinedOutput(); err != nil {
		b.Errorf("merge %d profiles into %s: %v: %s", len(profiles), out, err, msg)
		return
	}
	for _, by := range []string{"-top", "-top -cum"} {
		top := exec.Command("go", append(append([]string{"tool", "pprof"}, strings.Fields(by)...), "-nodecount=25", out)...)
		msg, err := top.CombinedOutput()
		if err != nil {
			b.Errorf("go tool pprof %s %s: %v: %s", by, out, err, msg)
			return
		}
		fmt.Printf("versus: %s (%d profiles), go tool pprof %s:\n%s\n", out, len(profiles), by, msg)
	}
}

// profileName names c's profiles.
func profileName(c *contender) string {
	if c.agents {
		return "vmctl"
	}
	return "pool"
}
