// Package version holds the build's identity, set by the linker:
//
//	-X github.com/kubectl-vmctl/kubectl-vmctl/internal/version.version=v0.1.0
package version

import "runtime/debug"

// These are overwritten with -ldflags -X at release time.
var (
	version = ""
	commit  = ""
	date    = ""
)

// Info is what `kubectl vmctl version` prints.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

// Get returns the build's version, commit and date. A `go install` build has no
// ldflags, so the module version and VCS stamp from the build info fill in.
func Get() Info {
	i := Info{Version: version, Commit: commit, Date: date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
	}
	if i.Version == "" {
		i.Version = "v0.0.0-dev"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}
