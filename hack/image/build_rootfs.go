package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// rootfsFlags are `image build -rootfs`'s flags.
type rootfsFlags struct {
	dir                          string
	images, labels               []string
	platform, user, created, out string
}

// runBuildRootfs writes the images of a directory tree: the layer once, to a
// temporary file beside the tarball (never whole in memory), then the
// tarball holding every image, each under its name.
func runBuildRootfs(f rootfsFlags, nargs int) error {
	if len(f.images) == 0 || f.platform == "" || f.out == "" || nargs > 0 {
		return errors.New("-rootfs needs -platform, -out and at least one -image, and no arguments; see image build -h")
	}
	if fi, err := os.Stat(f.dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("rootfs %s must be a directory, the image's /", f.dir)
	}
	spec, err := rootfsSpec(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.out), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.out), ".layer-*.tar.gz")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = WriteLayer(bw, f.dir, spec.Created)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromFile(tmp.Name())
	if err != nil {
		return fmt.Errorf("read the layer back: %w", err)
	}
	refs, err := RootfsImages(layer, spec)
	if err != nil {
		return err
	}
	if err := writeTarball(f.out, refs); err != nil {
		return err
	}
	var lines []string
	for ref, img := range refs {
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s: %s %s %s", f.out, ref, spec.Platform.String(), digest))
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}

// rootfsSpec reads the flags other than the tree.
func rootfsSpec(f rootfsFlags) (RootfsSpec, error) {
	p, err := parsePlatform(f.platform)
	if err != nil {
		return RootfsSpec{}, err
	}
	t, err := parseCreated(f.created)
	if err != nil {
		return RootfsSpec{}, err
	}
	lbl, err := parseLabels(f.labels)
	if err != nil {
		return RootfsSpec{}, err
	}
	spec := RootfsSpec{Platform: p, User: f.user, Created: t, Labels: lbl}
	for _, i := range f.images {
		n, entrypoint, _ := strings.Cut(i, "=")
		tag, err := name.NewTag(n, name.StrictValidation)
		if err != nil {
			return RootfsSpec{}, fmt.Errorf("image %q: %w; give NAME or NAME=ENTRYPOINT with a full name such as quay.io/kubevirt/virt-handler:v1.7.0", i, err)
		}
		spec.Images = append(spec.Images, RootfsImage{Name: tag, Entrypoint: entrypoint})
	}
	return spec, nil
}
