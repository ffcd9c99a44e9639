package cmdutil

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// Profile is kubectl's --profile and --profile-output: a Go profile of the
// command's whole run, written when it ends. A fleet's agents each write
// theirs, and `go tool pprof` merges them.
type Profile struct {
	Name   string
	Output string
}

// AddFlags binds --profile and --profile-output, worded as kubectl's.
func (p *Profile) AddFlags(fs *pflag.FlagSet) {
	if p.Name == "" {
		p.Name = "none"
	}
	if p.Output == "" {
		p.Output = "profile.pprof"
	}
	fs.StringVar(&p.Name, "profile", p.Name, "Name of profile to capture. One of (none|cpu|heap|goroutine|threadcreate|block|mutex)")
	fs.StringVar(&p.Output, "profile-output", p.Output, "Name of the file to write the profile to")
}

// Start starts the profile and returns what writes it, to be called once
// the command's work is done.
func (p *Profile) Start() (stop func() error, err error) {
	switch p.Name {
	case "none", "":
		return func() error { return nil }, nil
	case "cpu":
		f, err := os.Create(p.Output)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close() // the error says enough
			return nil, err
		}
		return func() error {
			pprof.StopCPUProfile()
			return f.Close()
		}, nil
	// Block and mutex profiles record nothing until given a rate; as
	// kubectl, sample every event.
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	profile := pprof.Lookup(p.Name)
	if profile == nil {
		return nil, fmt.Errorf("unknown profile %q: use one of none, cpu, heap, goroutine, threadcreate, block, mutex", p.Name)
	}
	return func() error {
		if p.Name == "heap" {
			runtime.GC()
		}
		f, err := os.Create(p.Output)
		if err != nil {
			return err
		}
		if err := profile.WriteTo(f, 0); err != nil {
			_ = f.Close() // the error says enough
			return err
		}
		return f.Close()
	}, nil
}
