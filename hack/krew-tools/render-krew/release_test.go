package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// The release is described three times: .goreleaser.yaml builds and
// archives it, krew/vmctl.yaml installs its archives, and
// hack/release-check.sh checks them. `make release-check` rehearses the
// whole release (goreleaser built from source, every platform compiled);
// this test, cheap enough for every `make unit`, checks that the three
// agree, so a platform or archive added to one and not the others fails
// here rather than on the release.

const root = "../../.."

type goreleaserConfig struct {
	Builds []struct {
		ID     string   `json:"id"`
		Binary string   `json:"binary"`
		Goos   []string `json:"goos"`
		Goarch []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		IDs             []string `json:"ids"`
		NameTemplate    string   `json:"name_template"`
		Formats         []string `json:"formats"`
		FormatOverrides []struct {
			Goos    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
		Files []json.RawMessage `json:"files"`
	} `json:"archives"`
}

// archive is one archive of the release, as goreleaser names and fills it.
type archive struct {
	os, arch, name string
	members        []string
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return c
}

// platforms lists the os/arch pairs goreleaser builds the build id for,
// and the build's binary name.
func (c goreleaserConfig) platforms(t *testing.T, id string) (ps []string, binary string) {
	t.Helper()
	for _, b := range c.Builds {
		if b.ID != id {
			continue
		}
		for _, goos := range b.Goos {
			for _, arch := range b.Goarch {
				ps = append(ps, goos+"/"+arch)
			}
		}
		return ps, b.Binary
	}
	t.Fatalf(".goreleaser.yaml has no build %q", id)
	return nil, ""
}

// archives lists the kubectl-vmctl archives goreleaser makes: their names
// by name_template and format_overrides, and what each holds.
func (c goreleaserConfig) archives(t *testing.T) []archive {
	t.Helper()
	if len(c.Archives) != 1 || !slices.Equal(c.Archives[0].IDs, []string{"kubectl-vmctl"}) {
		t.Fatalf(".goreleaser.yaml: want one archive of the kubectl-vmctl build, have %+v", c.Archives)
	}
	a := c.Archives[0]
	name, err := template.New("name").Option("missingkey=error").Parse(a.NameTemplate)
	if err != nil {
		t.Fatalf(".goreleaser.yaml: archive name_template: %v", err)
	}
	var files []string
	for _, raw := range a.Files {
		var f struct {
			Src         string `json:"src"`
			StripParent bool   `json:"strip_parent"`
		}
		if err := json.Unmarshal(raw, &f.Src); err != nil {
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatalf(".goreleaser.yaml: archive file %s: %v", raw, err)
			}
		}
		if _, err := os.Stat(filepath.Join(root, f.Src)); err != nil {
			t.Errorf(".goreleaser.yaml archives %s, which the repository lacks: %v", f.Src, err)
		}
		if f.StripParent {
			f.Src = filepath.Base(f.Src)
		}
		files = append(files, f.Src)
	}
	platforms, binary := c.platforms(t, "kubectl-vmctl")
	var out []archive
	for _, p := range platforms {
		goos, arch, _ := strings.Cut(p, "/")
		var b bytes.Buffer
		if err := name.Execute(&b, map[string]string{"Os": goos, "Arch": arch}); err != nil {
			t.Fatalf(".goreleaser.yaml: archive name_template: %v", err)
		}
		formats := a.Formats
		for _, o := range a.FormatOverrides {
			if o.Goos == goos {
				formats = o.Formats
			}
		}
		if len(formats) != 1 {
			t.Fatalf(".goreleaser.yaml: want one archive format for %s, have %v", p, formats)
		}
		// goreleaser names a Windows binary with .exe.
		bin := binary
		if goos == "windows" {
			bin += ".exe"
		}
		out = append(out, archive{os: goos, arch: arch, name: b.String() + "." + formats[0], members: append([]string{bin}, files...)})
	}
	return out
}

// krewPlatform is what a platform of krew's Plugin manifest says.
type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI   string `json:"uri"`
	Bin   string `json:"bin"`
	Files []struct {
		From string `json:"from"`
	} `json:"files"`
}

// TestReleaseDescriptionsAgree: krew/vmctl.yaml, rendered against a dist/
// holding exactly the archives .goreleaser.yaml makes, names each of them
// once, for its own os and arch, with a binary and files the archive
// holds; hack/release-check.sh checks the same platforms.
func TestReleaseDescriptionsAgree(t *testing.T) {
	c := readGoreleaser(t)
	archives := c.archives(t)
	dist := t.TempDir()
	for _, a := range archives {
		if err := os.WriteFile(filepath.Join(dist, a.name), []byte(a.name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "vmctl.yaml")
	if err := (options{template: filepath.Join(root, "krew", "vmctl.yaml"), dist: dist, tag: "v0.1.0", out: out}).run(); err != nil {
		t.Fatalf("krew/vmctl.yaml names an archive .goreleaser.yaml does not make: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Spec struct {
			Platforms []krewPlatform `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		t.Fatalf("rendered krew manifest: %v", err)
	}
	named := map[string]bool{}
	for _, p := range manifest.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		i := slices.IndexFunc(archives, func(a archive) bool { return a.os == os && a.arch == arch })
		if i < 0 {
			t.Errorf("krew/vmctl.yaml has a platform %s/%s that .goreleaser.yaml does not build", os, arch)
			continue
		}
		a := archives[i]
		if named[a.name] {
			t.Errorf("krew/vmctl.yaml has platform %s/%s twice", os, arch)
		}
		named[a.name] = true
		if want := "/v0.1.0/" + a.name; !strings.HasSuffix(p.URI, want) {
			t.Errorf("krew/vmctl.yaml: %s/%s installs %s, want the release's %s", os, arch, p.URI, a.name)
		}
		if !slices.Contains(a.members, p.Bin) {
			t.Errorf("krew/vmctl.yaml: %s/%s runs %s, which %s lacks (it holds %v)", os, arch, p.Bin, a.name, a.members)
		}
		for _, f := range p.Files {
			if !slices.Contains(a.members, f.From) {
				t.Errorf("krew/vmctl.yaml: %s/%s installs %s, which %s lacks (it holds %v)", os, arch, f.From, a.name, a.members)
			}
		}
	}
	for _, a := range archives {
		if !named[a.name] {
			t.Errorf("krew/vmctl.yaml does not install %s (%s/%s), which .goreleaser.yaml makes", a.name, a.os, a.arch)
		}
	}

	script, err := os.ReadFile(filepath.Join(root, "hack", "release-check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for list, build := range map[string]string{"archive_platforms": "kubectl-vmctl", "image_platforms": "vmctl-agent"} {
		m := regexp.MustCompile(`(?m)^` + list + `=\(([^)]*)\)`).FindSubmatch(script)
		if m == nil {
			t.Errorf("hack/release-check.sh sets no %s", list)
			continue
		}
		want, _ := c.platforms(t, build)
		got := strings.Fields(string(m[1]))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("hack/release-check.sh: %s=(%s), but .goreleaser.yaml builds %s for %s", list, strings.Join(got, " "), build, strings.Join(want, " "))
		}
	}
}
