//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux this runs on).
const clockTick = 10 * time.Millisecond

// components are processes to measure, by name.
type components map[string]int

// clusterProcesses are the control plane's processes, KubeVirt's, and this
// test process (which runs the kubelet and virt-handler doubles).
func clusterProcesses() components {
	c := components{"e2e test process (doubles)": os.Getpid()}
	for _, pid := range e.cluster.Pids() {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			c[strings.TrimSpace(string(comm))] = pid
		}
	}
	for name, pid := range e.kv.Pids() {
		c[name] = pid
	}
	return c
}

// read reads each process's CPU time so far and memory now (VmRSS, KiB),
// and says which processes it could not read.
func (c components) read() (cpu map[string]time.Duration, rss map[string]int, err error) {
	cpu, rss = map[string]time.Duration{}, map[string]int{}
	var errs []error
	for name, pid := range c {
		t, err := cpuTime(pid)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (pid %d): %w", name, pid, err))
			continue
		}
		cpu[name] = t
		_, total, err := readMemory(pid)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (pid %d): %w", name, pid, err))
			continue
		}
		rss[name] = total
	}
	return cpu, rss, errors.Join(errs...)
}

// usage is read, and fails t where a process could not be read: left out
// of one reading, it would count as nothing, or, read at the next one,
// with all the CPU of its life (a control plane process the harness
// restarted has another pid).
func (c components) usage(t testing.TB) (cpu map[string]time.Duration, rss map[string]int) {
	t.Helper()
	cpu, rss, err := c.read()
	if err != nil {
		t.Fatalf("cannot measure the cluster's processes: %v", err)
	}
	return cpu, rss
}

// sampler records each process's peak VmRSS.
type sampler struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   map[string]int
	// err is the first reading that failed.
	err error
}

// sample reads the processes' memory every period until stop.
func (c components) sample(period time.Duration) *sampler {
	s := &sampler{stopCh: make(chan struct{}), done: make(chan struct{}), peak: map[string]int{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			_, rss, err := c.read()
			s.mu.Lock()
			for name, kib := range rss {
				s.peak[name] = max(s.peak[name], kib)
			}
			if s.err == nil && err != nil {
				s.err = err
			}
			s.mu.Unlock()
			select {
			case <-t.C:
			case <-s.stopCh:
				return
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peaks (KiB); it fails t where a
// sample could not read a process, whose peak it may have missed.
func (s *sampler) stop(t testing.TB) map[string]int {
	t.Helper()
	close(s.stopCh)
	<-s.done
	if s.err != nil {
		t.Fatalf("cannot measure the cluster's processes' peak memory: %v", s.err)
	}
	return s.peak
}

// report says, per process, the CPU it used between cpu0 and cpu1 (and as
// cores over elapsed) and its peak memory.
func (c components) report(cpu0, cpu1 map[string]time.Duration, peaks map[string]int, elapsed time.Duration) string {
	var parts []string
	for _, name := range sortedKeys(c) {
		used := cpu1[name] - cpu0[name]
		parts = append(parts, fmt.Sprintf("%s CPU %s (%.2f cores) peak RSS %d MiB",
			name, used.Round(100*time.Millisecond), used.Seconds()/elapsed.Seconds(), peaks[name]>>10))
	}
	return strings.Join(parts, "; ")
}

// cpuTime is a process's user + system CPU time so far.
func cpuTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// reapedCPUTime is the user + system CPU time of a process's children that
// exited and were waited for (cutime + cstime).
func reapedCPUTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	cutime, err1 := strconv.ParseInt(f[13], 10, 64)
	cstime, err2 := strconv.ParseInt(f[14], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[13], f[14])
	}
	return time.Duration(cutime+cstime) * clockTick, nil
}

// startTime is when a process started, after the machine's boot.
func startTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, f[19])
	}
	return time.Duration(ticks) * clockTick, nil
}

// statFields are the fields of /proc/<pid>/stat after the command name
// (which may hold spaces): f[0] is field 3 (state), f[11] and f[12] utime
// and stime, f[13] and f[14] cutime and cstime, f[19] starttime.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return f, nil
}

// bootTime is when the machine booted, to 10 ms (/proc/stat's btime has
// whole seconds only).
func bootTime() (time.Time, error) {
	now := time.Now()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	up, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("/proc/uptime: %w", err)
	}
	return now.Add(-time.Duration(up * float64(time.Second))), nil
}

// readMemory reads RssAnon (private memory) and VmRSS in KiB.
func readMemory(pid int) (anon, total int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "RssAnon:":
			anon = v
		case "VmRSS:":
			total = v
		}
	}
	return anon, total, s.Err()
}

// agentFigures are the memory and CPU of a namespace's agent processes.
type agentFigures struct {
	count                     int
	anonP50, anonMax, anonSum int // KiB
	rssP50                    int // KiB
	cpuP50, cpuMax, cpuSum    time.Duration
	// started is when each Pod's agent process started, by Pod name.
	started map[string]time.Time
}

func (a agentFigures) String() string {
	return fmt.Sprintf("%d processes; RssAnon p50 %.1f MiB max %.1f MiB, %.0f MiB in all; VmRSS p50 %.1f MiB; CPU since start p50 %s max %s, %s in all",
		a.count, float64(a.anonP50)/1024, float64(a.anonMax)/1024, float64(a.anonSum)/1024, float64(a.rssP50)/1024,
		a.cpuP50.Round(10*time.Millisecond), a.cpuMax.Round(10*time.Millisecond), a.cpuSum.Round(100*time.Millisecond))
}

// agentProcesses measures the agent processes the kubelet double runs for
// ns's Pods: those whose --kubeconfig is in the double's folder for ns.
func agentProcesses(b *testing.B, ns string) agentFigures {
	b.Helper()
	dir := agentsDir(ns) + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	boot, err := bootTime()
	if err != nil {
		b.Fatal(err)
	}
	started := map[string]time.Time{}
	var anons, rsss []int
	var cpus []time.Duration
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), "\x00--kubeconfig="+dir) {
			continue
		}
		anon, total, err1 := readMemory(pid)
		cpu, err2 := cpuTime(pid)
		since, err3 := startTime(pid)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // it just exited
		}
		anons, rsss, cpus = append(anons, anon), append(rsss, total), append(cpus, cpu)
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if pod, ok := strings.CutPrefix(arg, "--hostname-override="); ok {
				started[pod] = boot.Add(since)
			}
		}
	}
	if len(anons) == 0 {
		b.Fatalf("no agent processes with a kubeconfig in %s", dir)
	}
	sort.Ints(anons)
	sort.Ints(rsss)
	sort.Slice(cpus, func(i, j int) bool { return cpus[i] < cpus[j] })
	f := agentFigures{count: len(anons), anonP50: anons[len(anons)/2], anonMax: anons[len(anons)-1],
		rssP50: rsss[len(rsss)/2], cpuP50: cpus[len(cpus)/2], cpuMax: cpus[len(cpus)-1], started: started}
	for i := range anons {
		f.anonSum += anons[i]
		f.cpuSum += cpus[i]
	}
	return f
}

// startToCreated measures, for each of ns's agents, the time from its
// process's start (started, from /proc) to its log line for the Created
// Event. Agents that restarted since (their process started after the VM)
// are left out and counted.
func startToCreated(b *testing.B, ns string, started map[string]time.Time) (d []time.Duration, restarted int) {
	b.Helper()
	created := fmt.Sprintf("reason=%q", agent.ReasonCreated)
	for pod, start := range started {
		raw, err := os.ReadFile(e.kubelet.LogPath(ns, pod))
		if err != nil {
			b.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, created) {
				at, err := klogTime(l)
				if err != nil {
					b.Fatalf("agent log of %s: %v", pod, err)
				}
				if at.Before(start) {
					restarted++
				} else {
					d = append(d, at.Sub(start))
				}
				found = true
				break
			}
		}
		if !found {
			b.Errorf("the agent of %s logged no Created line (it adopted or replaced a VM instead)", pod)
		}
	}
	return d, restarted
}

// agentsDir is the kubelet double's folder for ns's Pods, one folder each.
func agentsDir(ns string) string {
	return filepath.Dir(filepath.Dir(e.kubelet.LogPath(ns, "x")))
}

// tookRE finds the duration in the agent's "Deleted VM" log line.
var tookRE = regexp.MustCompile(`"Deleted VM".* took="?([0-9.]+[a-zµ]+)`)

// shutdowns reads, from every agent log of ns, how long each agent's
// shutdown took from SIGTERM to its VM gone (the "Deleted VM" line), and
// counts the agents that logged their VM may outlive them.
func shutdowns(b *testing.B, ns string) (took []time.Duration, failed int) {
	b.Helper()
	logs, err := filepath.Glob(filepath.Join(agentsDir(ns), "*", "agent.log"))
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range tookRE.FindAllSubmatch(raw, -1) {
			d, err := time.ParseDuration(string(m[1]))
			if err != nil {
				b.Fatalf("%s: %q: %v", path, m[0], err)
			}
			took = append(took, d)
		}
		failed += strings.Count(string(raw), "VM may outlive the Pod")
	}
	return took, failed
}

// klogTime is the time of a klog line, "I1123 15:41:06.123456 ...", in
// this year and the local zone (the agent's, as it runs here).
func klogTime(line string) (time.Time, error) {
	if len(line) < 21 {
		return time.Time{}, fmt.Errorf("not a klog line: %q", line)
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a klog line: %q: %w", line, err)
	}
	return t.AddDate(time.Now().Year(), 0, 0), nil
}
