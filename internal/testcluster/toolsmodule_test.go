package testcluster

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goMod is what `go mod edit -json` says of a go.mod file.
type goMod struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

func readGoMod(t *testing.T, path string) goMod {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestToolsModuleSharesVersionsWithTheProduct checks that every module both
// kubectl-vmctl's module and the control plane's tools module require is at
// one version, replaced alike. Go's build cache keys a compiled package by
// its module's path and version and by what it imports, so only then does
// the control plane's build reuse the packages (client-go, apimachinery,
// api, and what they import) that `make demo` compiled for kubectl-vmctl a
// minute earlier, instead of compiling them again.
func TestToolsModuleSharesVersionsWithTheProduct(t *testing.T) {
	product := readGoMod(t, filepath.Join("..", "..", "go.mod"))
	tools := readGoMod(t, filepath.Join("tools", "go.mod"))
	required := func(m goMod) map[string]string {
		r := map[string]string{}
		for _, req := range m.Require {
			r[req.Path] = req.Version
		}
		for _, rep := range m.Replace {
			if _, ok := r[rep.Old.Path]; ok {
				r[rep.Old.Path] += " => " + rep.New.Path + "@" + rep.New.Version
			}
		}
		return r
	}
	p, tl := required(product), required(tools)
	shared := 0
	for path, v := range p {
		tv, ok := tl[path]
		if !ok {
			continue
		}
		shared++
		// A replacement by the module itself is the version the cache sees.
		if strip(v, path) != strip(tv, path) {
			t.Errorf("%s: %s in go.mod, %s in internal/testcluster/tools/go.mod; require one version in both", path, v, tv)
		}
	}
	if shared < 50 {
		t.Errorf("the modules share %d requirements; expected the Kubernetes libraries and their dependencies", shared)
	}
}

// strip gives the version of path the build uses: a replacement of the
// module by itself at some version (the tools module requires Kubernetes'
// staging modules at v0.0.0 and replaces each so) is that version.
func strip(v, path string) string {
	_, repl, ok := strings.Cut(v, " => ")
	if version, same := strings.CutPrefix(repl, path+"@"); ok && same {
		return version
	}
	return v
}
