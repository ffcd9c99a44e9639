package main

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkStart times whole processes, start-up included: vmctl-agent
// --help and kubectl-vmctl --help (package initialisation, the command
// tree, the help), and /bin/true for the cost of any process. Each run's
// figure is the CPU time (user + system) the OS accounts to the finished
// child; the benchmark reports its min, median and max over the b.N runs,
// and the binary's size. `make bench-start` builds the binaries as `make
// build` and `make image` do and runs it (docs/benchmarks.md, "Agent
// start").
func BenchmarkStart(b *testing.B) {
	agentBinary, pluginBinary := os.Getenv("VMCTL_AGENT_BINARY"), os.Getenv("VMCTL_BINARY")
	if agentBinary == "" || pluginBinary == "" {
		b.Skip("set VMCTL_AGENT_BINARY and VMCTL_BINARY to the built binaries, as make bench-start does")
	}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"true", []string{"/bin/true"}},
		{"vmctl-agent", []string{agentBinary, "--help"}},
		{"kubectl-vmctl", []string{pluginBinary, "--help"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			info, err := os.Stat(c.argv[0])
			if err != nil {
				b.Fatal(err)
			}
			var cpu []time.Duration
			for range b.N {
				cmd := exec.CommandContext(b.Context(), c.argv[0], c.argv[1:]...)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %v", c.argv, err)
				}
				cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			slices.Sort(cpu)
			median := (cpu[(len(cpu)-1)/2] + cpu[len(cpu)/2]) / 2
			b.ReportMetric(ms(cpu[0]), "cpu-min-ms")
			b.ReportMetric(ms(median), "cpu-median-ms")
			b.ReportMetric(ms(cpu[len(cpu)-1]), "cpu-max-ms")
			b.ReportMetric(float64(info.Size()), "binary-bytes")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
