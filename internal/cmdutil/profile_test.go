package cmdutil

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestProfile(t *testing.T) {
	for _, name := range []string{"cpu", "heap", "goroutine", "mutex"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.pprof")
			var p Profile
			fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
			p.AddFlags(fs)
			if err := fs.Parse([]string{"--profile=" + name, "--profile-output=" + out}); err != nil {
				t.Fatal(err)
			}
			stop, err := p.Start()
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			// A profile is a gzipped protocol buffer.
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			z, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s profile is not gzipped: %v", name, err)
			}
			if n, err := io.Copy(io.Discard, z); err != nil || n == 0 {
				t.Errorf("%s profile: %d bytes, %v", name, n, err)
			}
		})
	}
	t.Run("none writes nothing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "p.pprof")
		p := Profile{Name: "none", Output: out}
		stop, err := p.Start()
		if err != nil {
			t.Fatal(err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it absent", out, err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		p := Profile{Name: "cpus", Output: filepath.Join(t.TempDir(), "p.pprof")}
		if _, err := p.Start(); err == nil || !strings.Contains(err.Error(), `unknown profile "cpus"`) {
			t.Errorf("Start() = %v, want an unknown profile error", err)
		}
	})
}
