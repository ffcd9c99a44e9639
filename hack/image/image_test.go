package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// skipOrFail skips t for reason, unless VMCTL_CI is set, as .ci/run does:
// in CI a test that cannot run fails. This module's copy of the main
// module's internal/testcluster/ci.Skip.
func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("VMCTL_CI") != "" {
		t.Fatalf("%s (VMCTL_CI is set: in CI a test that cannot run fails)", reason)
	}
	t.Skip(reason)
}

// A tiny static program stands in for vmctl-agent: building the real one for
// two platforms would take minutes; what the image is made of is the same.
const program = `package main

import "os"

func main() { os.Stdout.WriteString("hello from the image\n") }
`

// binaries maps GOARCH to program built for linux/GOARCH, once for all tests.
var binaries map[string]string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = os.RemoveAll(dir) }()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	binaries = map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, arch, "vmctl-agent")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build the test binary: %v\n%s", err, b)
			return 2
		}
		binaries[arch] = out
	}
	return m.Run()
}

// staticBinary is the test program built for linux/arch.
func staticBinary(t *testing.T, arch string) string {
	t.Helper()
	return binaries[arch]
}

const tag = "ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3"

// buildTarball runs `image build` as make image and goreleaser do.
func buildTarball(t *testing.T, arch string, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	args := append([]string{"-binary", staticBinary(t, arch), "-platform", "linux/" + arch, "-tag", tag,
		"-created", "1700000000", "-label", "org.opencontainers.image.version=v1.2.3", "-out", out}, extra...)
	if err := runBuild(args); err != nil {
		t.Fatalf("image build %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func loadTagged(t *testing.T, file, ref string) v1.Image {
	t.Helper()
	tg, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(file, &tg)
	if err != nil {
		t.Fatalf("load %s from %s: %v", ref, file, err)
	}
	return img
}

func TestBuildTarballEntrypointUserAndLayer(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			img := loadTagged(t, buildTarball(t, arch), tag)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != arch {
				t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
			}
			if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/vmctl-agent"}) || cf.Config.Cmd != nil {
				t.Errorf("entrypoint %q cmd %q, want [/vmctl-agent] and no cmd", cf.Config.Entrypoint, cf.Config.Cmd)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cf.Config.User)
			}
			if got := cf.Config.Labels["org.opencontainers.image.version"]; got != "v1.2.3" {
				t.Errorf("version label %q, want v1.2.3", got)
			}
			if want := time.Unix(1700000000, 0).UTC(); !cf.Created.Equal(want) {
				t.Errorf("created %s, want %s", cf.Created.Time, want)
			}
			layers, err := img.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("layers %d (%v), want 1", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = rc.Close() }()
			tr := tar.NewReader(rc)
			h, err := tr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if h.Name != "vmctl-agent" || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
				t.Errorf("layer entry %s mode %o owner %d:%d, want vmctl-agent 755 0:0", h.Name, h.Mode, h.Uid, h.Gid)
			}
			var content bytes.Buffer
			if _, err := content.ReadFrom(tr); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(staticBinary(t, arch))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(content.Bytes(), want) {
				t.Errorf("the layer's vmctl-agent differs from the binary")
			}
			if h, err := tr.Next(); err == nil {
				t.Errorf("layer has another entry %s", h.Name)
			}
			if err := Check(img, Want{Platform: v1.Platform{OS: "linux", Architecture: arch}, User: DefaultUser, Path: "/vmctl-agent", Binary: want}); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func TestBuildIsReproducible(t *testing.T) {
	a, err := loadTagged(t, buildTarball(t, "amd64"), tag).Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadTagged(t, buildTarball(t, "amd64"), tag).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("two builds of one binary: %s and %s", a, b)
	}
}

func TestBuildTagsAndPath(t *testing.T) {
	file := buildTarball(t, "amd64", "-tag", "registry.k8s.io/pause:3.10", "-path", "/usr/local/bin/agent", "-user", "65535")
	for _, ref := range []string{tag, "registry.k8s.io/pause:3.10"} {
		img := loadTagged(t, file, ref)
		if err := Check(img, Want{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, User: "65535", Path: "/usr/local/bin/agent"}); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

// layerEntries lists the layer's tar entries of img as "name mode" lines
// (a directory "name 5 mode", a hard link "name -> target mode"), and
// returns the regular files' contents by name.
func layerEntries(t *testing.T, img v1.Image) ([]string, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	var names []string
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, contents
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeLink:
			names = append(names, fmt.Sprintf("%s -> %s %o", h.Name, h.Linkname, h.Mode))
		case tar.TypeReg:
			names = append(names, fmt.Sprintf("%s %o", h.Name, h.Mode))
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			contents[h.Name] = b
		default:
			names = append(names, fmt.Sprintf("%s %c %o", h.Name, h.Typeflag, h.Mode))
		}
	}
}

func TestBuildMultiCallBinaryWithLinks(t *testing.T) {
	file := buildTarball(t, "amd64", "-path", "/usr/bin/monitor", "-link", "/usr/bin/cp", "-link", "/bin/tail")
	img := loadTagged(t, file, tag)
	names, contents := layerEntries(t, img)
	want := []string{"usr/ 5 755", "usr/bin/ 5 755", "usr/bin/monitor 755", "usr/bin/cp -> usr/bin/monitor 755", "bin/ 5 755", "bin/tail -> usr/bin/monitor 755"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("layer entries:\n%q\nwant\n%q", names, want)
	}
	binary, err := os.ReadFile(staticBinary(t, "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(contents["usr/bin/monitor"], binary) {
		t.Error("usr/bin/monitor differs from the binary")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/bin/monitor"}) {
		t.Errorf("entrypoint %q, want [/usr/bin/monitor]", cf.Config.Entrypoint)
	}
}

// TestBuildProgramBesideTheEntrypoint: -program adds another static
// executable, root's and 0755, which a Pod runs by naming it as its
// command; the entrypoint stays -binary's.
func TestBuildProgramBesideTheEntrypoint(t *testing.T) {
	program := staticBinary(t, "amd64")
	file := buildTarball(t, "amd64", "-path", "/vmctl-agent", "-program", program+"=/vmctl-metrics-adapter")
	img := loadTagged(t, file, tag)
	names, contents := layerEntries(t, img)
	if want := []string{"vmctl-agent 755", "vmctl-metrics-adapter 755"}; !reflect.DeepEqual(names, want) {
		t.Errorf("layer entries %q, want %q", names, want)
	}
	b, err := os.ReadFile(program)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(contents["vmctl-metrics-adapter"], b) {
		t.Error("vmctl-metrics-adapter differs from the program")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/vmctl-agent"}) {
		t.Errorf("entrypoint %q, want [/vmctl-agent]", cf.Config.Entrypoint)
	}
}

func TestBuildDataFilesOnly(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, []byte("a disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "disk.tar")
	if err := runBuild([]string{"-file", disk + "=/disk/disk.img", "-platform", "linux/amd64", "-tag", tag, "-out", out}); err != nil {
		t.Fatal(err)
	}
	img := loadTagged(t, out, tag)
	names, contents := layerEntries(t, img)
	if want := []string{"disk/ 5 755", "disk/disk.img 644"}; !reflect.DeepEqual(names, want) {
		t.Errorf("layer entries %q, want %q", names, want)
	}
	if string(contents["disk/disk.img"]) != "a disk" {
		t.Errorf("disk/disk.img holds %q, want the file's content", contents["disk/disk.img"])
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.Entrypoint != nil {
		t.Errorf("entrypoint %q, want none: the image holds no program", cf.Config.Entrypoint)
	}
}

// TestBuildFileOwner holds -file-owner to the owner of the data files (and
// only theirs: the parent directories stay root's), and the default to root.
func TestBuildFileOwner(t *testing.T) {
	kernel := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(kernel, []byte("a kernel"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"boot/ 0:0", "boot/vmlinuz 0:0"}},
		{[]string{"-file-owner", "107:107"}, []string{"boot/ 0:0", "boot/vmlinuz 107:107"}},
	} {
		out := filepath.Join(t.TempDir(), "kernel.tar")
		args := append([]string{"-file", kernel + "=/boot/vmlinuz", "-platform", "linux/amd64", "-tag", tag, "-out", out}, tc.args...)
		if err := runBuild(args); err != nil {
			t.Fatal(err)
		}
		layers, err := loadTagged(t, out, tag).Layers()
		if err != nil {
			t.Fatal(err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %d:%d", h.Name, h.Uid, h.Gid))
		}
		_ = rc.Close()
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("image build %s: owners %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	dynamic := "/bin/true" // dynamically linked on any Linux with a libc
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no tag", []string{"-binary", "x", "-platform", "linux/amd64", "-out", "x.tar"}, "at least one -tag"},
		{"name user", []string{"-user", "nonroot"}, "numeric uid"},
		{"short tag", []string{"-tag", "vmctl"}, "give a full name"},
		{"wrong arch", []string{"-platform", "linux/arm64"}, "not arm64"},
		{"relative path", []string{"-path", "vmctl-agent"}, "clean absolute file path"},
		{"dynamic binary", []string{"-binary", dynamic}, "dynamically linked"},
		{"link twice", []string{"-link", "/vmctl-agent"}, "given twice"},
		{"relative link", []string{"-link", "usr/bin/cp"}, "clean absolute file path"},
		{"file without path", []string{"-file", "disk.img"}, "want SOURCE=PATH-IN-IMAGE"},
		{"program without path", []string{"-program", "adapter"}, "want SOURCE=PATH-IN-IMAGE"},
		{"dynamic program", []string{"-program", dynamic + "=/true"}, "dynamically linked"},
		{"file owner by name", []string{"-file-owner", "qemu"}, "numeric uid:gid"},
		{"file owner without gid", []string{"-file-owner", "107"}, "numeric uid:gid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.name, "dynamic") {
				if _, err := os.Stat(dynamic); err != nil {
					skipOrFail(t, "no /bin/true")
				}
			}
			args := tc.args
			if tc.name != "no tag" {
				args = append([]string{"-binary", staticBinary(t, "amd64"), "-platform", "linux/amd64", "-tag", tag,
					"-out", filepath.Join(t.TempDir(), "x.tar")}, tc.args...)
			}
			err := runBuild(args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("image build %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}

func TestCheckRejects(t *testing.T) {
	img := loadTagged(t, buildTarball(t, "amd64"), tag)
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	setConfig := func(f func(*v1.Config)) v1.Image {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		f(&cf.Config)
		out, err := mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	extra, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar([]layerEntry{{path: "/bin/sh", content: []byte("#!"), mode: 0o755}}, time.Unix(0, 0)))), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	twoLayers, err := mutate.AppendLayers(img, extra)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		img  v1.Image
		want Want
		msg  string
	}{
		{"root", setConfig(func(c *v1.Config) { c.User = "0" }), Want{Platform: amd64, User: "0"}, "is root"},
		{"other user", img, Want{Platform: amd64, User: "1000"}, `user is "65532:65532", want "1000"`},
		{"cmd", setConfig(func(c *v1.Config) { c.Cmd = []string{"--help"} }), Want{Platform: amd64, User: DefaultUser}, "want none"},
		{"shell entrypoint", setConfig(func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }), Want{Platform: amd64, User: DefaultUser}, "want one absolute path"},
		{"other platform", img, Want{Platform: v1.Platform{OS: "linux", Architecture: "arm64"}, User: DefaultUser}, "want linux/arm64"},
		{"two layers", twoLayers, Want{Platform: amd64, User: DefaultUser}, "2 layers, want 1"},
		{"other binary", img, Want{Platform: amd64, User: DefaultUser, Binary: []byte("other")}, "differs from the binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.img, tc.want)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Check: %v, want an error containing %q", err, tc.msg)
			}
		})
	}
}

func TestPushIndexToRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	files := map[string]string{"amd64": buildTarball(t, "amd64"), "arm64": buildTarball(t, "arm64")}
	refs := []string{host + "/kubectl-vmctl/kubectl-vmctl:v1.2.3", host + "/kubectl-vmctl/kubectl-vmctl:latest"}
	if err := runPush([]string{"-insecure", "-tag", refs[0], "-tag", refs[1], files["amd64"], files["arm64"]}); err != nil {
		t.Fatalf("image push: %v", err)
	}
	var digests []v1.Hash
	for _, r := range refs {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("pull %s: %v", r, err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 2 {
			t.Fatalf("%s: %d manifests, want 2", r, len(m.Manifests))
		}
		for _, desc := range m.Manifests {
			arch := desc.Platform.Architecture
			want, err := loadTagged(t, files[arch], tag).Digest()
			if err != nil {
				t.Fatal(err)
			}
			if desc.Platform.OS != "linux" || desc.Digest != want {
				t.Errorf("%s: entry %s %s, want linux %s", r, desc.Platform, desc.Digest, want)
			}
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(img, Want{Platform: *desc.Platform, User: DefaultUser, Path: "/vmctl-agent"}); err != nil {
				t.Errorf("%s %s as pulled: %v", r, arch, err)
			}
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("tags point at %s and %s, want one index", digests[0], digests[1])
	}
}
