package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is what a test checks of a layer's entry.
type entry struct {
	Type     byte
	Mode     int64
	UID, GID int
	Link     string
	Content  string
}

// readLayer reads a gzipped layer tar into its entries by name, checking
// that every entry carries mtime and no other time.
func readLayer(t *testing.T, layer []byte, mtime time.Time) map[string]entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v atime %v ctime %v owner names %q:%q, want only mtime %v", h.Name, h.ModTime, h.AccessTime, h.ChangeTime, h.Uname, h.Gname, mtime)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = entry{Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, Link: h.Linkname, Content: string(b)}
	}
}

// makeTree makes a small root file system in a temporary directory.
func makeTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(os.Mkdir(filepath.Join(dir, "usr"), 0o755))
	must(os.Mkdir(filepath.Join(dir, "usr", "bin"), 0o755))
	must(os.Mkdir(filepath.Join(dir, "secret"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "usr", "bin", "gunzip"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Link(filepath.Join(dir, "usr", "bin", "gunzip"), filepath.Join(dir, "usr", "bin", "uncompress")))
	must(os.WriteFile(filepath.Join(dir, "usr", "bin", "passwd"), []byte("setuid"), 0o755))
	must(os.Chmod(filepath.Join(dir, "usr", "bin", "passwd"), 0o755|os.ModeSetuid))
	must(os.Symlink("usr/bin", filepath.Join(dir, "bin")))
	must(syscall.Mkfifo(filepath.Join(dir, "etc", "initctl"), 0o600))
	return dir
}

func TestWriteLayerKeepsTheTree(t *testing.T) {
	dir := makeTree(t)
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		// A file of another owner, as KubeVirt's qemu user owns some.
		if err := os.Chown(filepath.Join(dir, "secret"), 107, 107); err != nil {
			t.Fatal(err)
		}
	}
	secretOwner := map[bool]int{true: 107, false: uid}[uid == 0]
	secretGroup := map[bool]int{true: 107, false: gid}[uid == 0]
	mtime := time.Unix(1700000000, 0)
	var buf bytes.Buffer
	if err := WriteLayer(&buf, dir, mtime); err != nil {
		t.Fatal(err)
	}
	got := readLayer(t, buf.Bytes(), mtime)
	want := map[string]entry{
		"bin":                {Type: tar.TypeSymlink, Mode: 0o777, UID: uid, GID: gid, Link: "usr/bin"},
		"etc/":               {Type: tar.TypeDir, Mode: 0o755, UID: uid, GID: gid},
		"etc/passwd":         {Type: tar.TypeReg, Mode: 0o644, UID: uid, GID: gid, Content: "root:x:0:0::/root:/bin/sh\n"},
		"secret/":            {Type: tar.TypeDir, Mode: 0o700, UID: secretOwner, GID: secretGroup},
		"usr/":               {Type: tar.TypeDir, Mode: 0o755, UID: uid, GID: gid},
		"usr/bin/":           {Type: tar.TypeDir, Mode: 0o755, UID: uid, GID: gid},
		"usr/bin/gunzip":     {Type: tar.TypeReg, Mode: 0o755, UID: uid, GID: gid, Content: "#!/bin/sh\n"},
		"usr/bin/passwd":     {Type: tar.TypeReg, Mode: 0o4755, UID: uid, GID: gid, Content: "setuid"},
		"usr/bin/uncompress": {Type: tar.TypeLink, Mode: 0o755, UID: uid, GID: gid, Link: "usr/bin/gunzip"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer entries:\n got %+v\nwant %+v\n(the fifo etc/initctl must be left out)", got, want)
	}
	var again bytes.Buffer
	if err := WriteLayer(&again, dir, mtime); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("the same tree made two different layers")
	}
}

func TestBuildRootfsImages(t *testing.T) {
	dir := makeTree(t)
	out := filepath.Join(t.TempDir(), "images.tar")
	launcher, handler := "quay.io/kubevirt/virt-launcher:v1.7.0", "quay.io/kubevirt/virt-handler:v1.7.0"
	if err := runBuild([]string{"-rootfs", dir, "-platform", "linux/amd64", "-created", "1700000000",
		"-image", launcher + "=/usr/bin/virt-launcher", "-image", handler + "=/usr/bin/virt-handler", "-out", out}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{launcher: "/usr/bin/virt-launcher", handler: "/usr/bin/virt-handler"}
	var layerDigests []string
	for ref, entrypoint := range want {
		img := loadTagged(t, out, ref)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if !reflect.DeepEqual(c.Entrypoint, []string{entrypoint}) || c.User != "" || !reflect.DeepEqual(c.Env, []string{RootfsPath}) || len(c.Cmd) > 0 {
			t.Errorf("%s config: entrypoint %q user %q env %q cmd %q, want entrypoint %s, root, %s and no cmd", ref, c.Entrypoint, c.User, c.Env, c.Cmd, entrypoint, RootfsPath)
		}
		if cf.Architecture != "amd64" || !cf.Created.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: architecture %s created %v", ref, cf.Architecture, cf.Created)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers (%v), want 1", ref, len(layers), err)
		}
		d, err := layers[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		layerDigests = append(layerDigests, d.String())
		_, files := layerEntries(t, img)
		if string(files["etc/passwd"]) != "root:x:0:0::/root:/bin/sh\n" {
			t.Errorf("%s: /etc/passwd is %q", ref, files["etc/passwd"])
		}
	}
	if layerDigests[0] != layerDigests[1] {
		t.Errorf("the images have layers %s, want one shared", strings.Join(layerDigests, " and "))
	}
	// The tarball holds the shared layer once.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[0].Layers[0] != m[1].Layers[0] {
		t.Errorf("manifest %+v: want two images naming one layer file", m)
	}
}

func TestBuildRootfsRefuses(t *testing.T) {
	dir := makeTree(t)
	base := []string{"-rootfs", dir, "-platform", "linux/amd64", "-out", filepath.Join(t.TempDir(), "x.tar")}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no image", nil, "at least one -image"},
		{"tag", []string{"-image", "quay.io/kubevirt/virt-handler:v1.7.0", "-tag", "quay.io/kubevirt/virt-handler:v1.7.0"}, "name the images with -image"},
		{"binary", []string{"-image", "quay.io/kubevirt/virt-handler:v1.7.0", "-binary", "x"}, "name the images with -image"},
		{"short name", []string{"-image", "virt-handler=/usr/bin/virt-handler"}, "give NAME or NAME=ENTRYPOINT"},
		{"relative entrypoint", []string{"-image", "quay.io/kubevirt/virt-handler:v1.7.0=virt-handler"}, "must be an absolute path"},
		{"twice", []string{"-image", "quay.io/kubevirt/virt-handler:v1.7.0", "-image", "quay.io/kubevirt/virt-handler:v1.7.0=/usr/bin/virt-handler"}, "given twice"},
		{"name user", []string{"-image", "quay.io/kubevirt/virt-handler:v1.7.0", "-user", "qemu"}, "numeric uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runBuild(append(append([]string{}, base...), tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("image build -rootfs %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
	if err := runBuild([]string{"-rootfs", filepath.Join(dir, "etc", "passwd"), "-platform", "linux/amd64", "-image", "quay.io/kubevirt/virt-handler:v1.7.0", "-out", filepath.Join(t.TempDir(), "x.tar")}); err == nil || !strings.Contains(err.Error(), "must be a directory") {
		t.Errorf("image build -rootfs FILE: error %v, want one saying it must be a directory", err)
	}
}
