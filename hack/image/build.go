package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultUser is the image's user: the "nonroot" uid and gid of distroless and
// Chainguard images, which scaffold's runAsUser names too.
const DefaultUser = "65532:65532"

// Spec says what image Build makes of a binary.
type Spec struct {
	// Binary is the static executable to put in the image; nil makes an
	// image of Files only, with no entrypoint (a containerDisk's shape).
	Binary []byte
	// Path is where the binary goes in the image, and the entrypoint.
	Path string
	// Links are more paths of the binary, hard links to Path: a multi-call
	// program tells what to be by the name it runs as.
	Links []string
	// Programs are more static executables beside the entrypoint, mode
	// 0755, owned by root, e.g. /vmctl-metrics-adapter, which a Pod runs
	// by naming it as its command.
	Programs []File
	// Files are data files to add, mode 0644, e.g. a disk under /disk.
	Files []File
	// Platform is the binary's os/arch.
	Platform v1.Platform
	// User is the config's user, uid:gid.
	User string
	// Created stamps the config and the file, so the same binary always
	// makes the same image digest.
	Created time.Time
	// Labels go in the config (org.opencontainers.image.*).
	Labels map[string]string
}

// File is a data file in the image, owned by UID:GID (KubeVirt wants its
// containerDisk and kernel-boot files owned by its qemu user, 107).
type File struct {
	Path     string
	Content  []byte
	UID, GID int
}

// Build makes the image: an empty base, one layer with the binary (mode 0755,
// owned by root so the non-root user cannot change it), its links and the
// data files, and a config whose entrypoint is the binary. The Pod's args
// follow the entrypoint.
func Build(s Spec) (v1.Image, error) {
	var entries []layerEntry
	if s.Binary != nil {
		entries = append(entries, layerEntry{path: s.Path, content: s.Binary, mode: 0o755})
		for _, l := range s.Links {
			entries = append(entries, layerEntry{path: l, link: s.Path, mode: 0o755})
		}
	} else if len(s.Links) > 0 || len(s.Files) == 0 {
		return nil, errors.New("an image needs a binary, or data files only (no links then)")
	}
	for _, f := range s.Programs {
		entries = append(entries, layerEntry{path: f.Path, content: f.Content, mode: 0o755})
	}
	for _, f := range s.Files {
		entries = append(entries, layerEntry{path: f.Path, content: f.Content, mode: 0o644, uid: f.UID, gid: f.GID})
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !path.IsAbs(e.path) || path.Clean(e.path) != e.path || e.path == "/" {
			return nil, fmt.Errorf("path in the image %q must be a clean absolute file path such as /vmctl-agent", e.path)
		}
		if seen[e.path] {
			return nil, fmt.Errorf("path in the image %q is given twice", e.path)
		}
		seen[e.path] = true
	}
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		return nil, errors.New("platform needs an os and an architecture, e.g. linux/amd64")
	}
	if err := checkUser(s.User); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar(entries, s.Created))), nil
	})
	if err != nil {
		return nil, fmt.Errorf("make the layer: %w", err)
	}
	// Docker media types, as the tarball format (docker save's) records
	// none: the digest printed here is the one `check` and a runtime see.
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "hack/image build " + entries[0].path, Comment: "static binary"},
	})
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant, s.Platform.OSVersion
	cf.Created = v1.Time{Time: s.Created}
	cf.Config.Entrypoint = nil
	if s.Binary != nil {
		cf.Config.Entrypoint = []string{s.Path}
	}
	cf.Config.Cmd = nil
	cf.Config.User = s.User
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = s.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("write the config: %w", err)
	}
	return img, nil
}

// layerEntry is a file in the layer: content with mode and owner, or a hard
// link to another entry's path (with that entry's mode).
type layerEntry struct {
	path     string
	content  []byte
	mode     int64
	link     string
	uid, gid int
}

// layerTar is the layer's uncompressed tar: the entries' parent directories
// and the entries, with fixed owners and times.
func layerTar(entries []layerEntry, mtime time.Time) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, e := range entries {
		var parents []string
		for d := path.Dir(e.path); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
		}
		name := strings.TrimPrefix(e.path, "/")
		if e.link != "" {
			// The link's mode too: runtimes chmod the shared file to it.
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: strings.TrimPrefix(e.link, "/"), Mode: e.mode, ModTime: mtime, Format: tar.FormatPAX})
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: e.mode, Uid: e.uid, Gid: e.gid, Size: int64(len(e.content)), ModTime: mtime, Format: tar.FormatPAX})
		_, _ = tw.Write(e.content)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// checkUser accepts uid or uid:gid, numeric: the image has no /etc/passwd to
// resolve a name, and runAsNonRoot needs a number to check.
func checkUser(u string) error {
	uid, gid, hasGID := strings.Cut(u, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return fmt.Errorf("user %q must be a numeric uid or uid:gid, e.g. %s: the image has no /etc/passwd", u, DefaultUser)
		}
	}
	return nil
}

// parseOwner reads a file's owner, uid:gid, both numeric.
func parseOwner(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	uid64, uerr := strconv.ParseUint(u, 10, 31)
	gid64, gerr := strconv.ParseUint(g, 10, 31)
	if !ok || uerr != nil || gerr != nil {
		return 0, 0, fmt.Errorf("file owner %q must be a numeric uid:gid, e.g. 107:107", s)
	}
	return int(uid64), int(gid64), nil
}

// parsePlatform reads os/arch[/variant].
func parsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch such as linux/amd64", s)
	}
	return *p, nil
}

// parseCreated reads unix seconds (goreleaser's CommitTimestamp, git's %ct,
// SOURCE_DATE_EPOCH) or RFC 3339; empty means the Unix epoch.
func parseCreated(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("created %q: want unix seconds or RFC 3339", s)
	}
	return t.UTC(), nil
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static binary to put in the image (required unless -file is given)")
	inImage := fs.String("path", "", "where the binary goes in the image, also the entrypoint (default /<binary's name>)")
	platform := fs.String("platform", "", "the binary's os/arch, e.g. linux/amd64 (required)")
	user := fs.String("user", "", "the image's user, numeric uid:gid (default "+DefaultUser+"; with -rootfs, root)")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time, unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else the epoch)")
	out := fs.String("out", "", "the tarball to write (required)")
	rootfs := fs.String("rootfs", "", "a directory to make the image's one layer of, as its / (instead of -binary; name the images with -image)")
	var tags, labels, links, files, programs, images listFlag
	fs.Var(&tags, "tag", "a name the image is loaded as, e.g. ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3 (required, repeatable)")
	fs.Var(&images, "image", "with -rootfs: an image to write, NAME or NAME=ENTRYPOINT, e.g. quay.io/kubevirt/virt-handler:v1.7.0=/usr/bin/virt-handler (required, repeatable; the images share the layer)")
	fs.Var(&labels, "label", "a config label key=value (repeatable)")
	fs.Var(&links, "link", "another path of the binary in the image, a hard link, for a multi-call program (repeatable)")
	fs.Var(&files, "file", "a data file to add, SOURCE=PATH-IN-IMAGE, mode 0644 (repeatable)")
	fs.Var(&programs, "program", "another static program to add beside -binary, SOURCE=PATH-IN-IMAGE, mode 0755, owned by root (repeatable)")
	fileOwner := fs.String("file-owner", "0:0", "the owner of the -file files, numeric uid:gid, e.g. 107:107 for KubeVirt's qemu user")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rootfs != "" {
		if *binary != "" || *inImage != "" || len(tags)+len(links)+len(files)+len(programs) > 0 {
			return errors.New("-rootfs takes no -binary, -path, -link, -file or -tag: name the images with -image")
		}
		return runBuildRootfs(rootfsFlags{dir: *rootfs, images: images, platform: *platform, user: *user, created: *created, labels: labels, out: *out}, fs.NArg())
	}
	if *user == "" {
		*user = DefaultUser
	}
	if (*binary == "" && len(files) == 0) || *platform == "" || *out == "" || len(tags) == 0 || fs.NArg() > 0 {
		return errors.New("needs -binary (or -file), -platform, -out and at least one -tag, and no arguments; see image build -h")
	}
	p, err := parsePlatform(*platform)
	if err != nil {
		return err
	}
	var content []byte
	if *binary != "" {
		if content, err = os.ReadFile(*binary); err != nil {
			return err
		}
		if err := checkStatic(content, p); err != nil {
			return fmt.Errorf("%s: %w", *binary, err)
		}
		if *inImage == "" {
			*inImage = "/" + filepath.Base(*binary)
		}
	}
	uid, gid, err := parseOwner(*fileOwner)
	if err != nil {
		return err
	}
	var data []File
	for _, f := range files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || src == "" || dst == "" {
			return fmt.Errorf("file %q: want SOURCE=PATH-IN-IMAGE, e.g. disk.img=/disk/disk.img", f)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		data = append(data, File{Path: dst, Content: b, UID: uid, GID: gid})
	}
	var progs []File
	for _, f := range programs {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || src == "" || dst == "" {
			return fmt.Errorf("program %q: want SOURCE=PATH-IN-IMAGE, e.g. bin/vmctl-metrics-adapter=/vmctl-metrics-adapter", f)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := checkStatic(b, p); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		progs = append(progs, File{Path: dst, Content: b})
	}
	t, err := parseCreated(*created)
	if err != nil {
		return err
	}
	lbl, err := parseLabels(labels)
	if err != nil {
		return err
	}
	img, err := Build(Spec{Binary: content, Path: *inImage, Links: links, Programs: progs, Files: data, Platform: p, User: *user, Created: t, Labels: lbl})
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, tag := range tags {
		ref, err := name.NewTag(tag, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("tag %q: %w; give a full name such as ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3", tag, err)
		}
		refs[ref] = img
	}
	if err := writeTarball(*out, refs); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s %s %s\n", *out, strings.Join(tags, " "), p.String(), digest)
	return nil
}

// parseLabels reads key=value labels.
func parseLabels(labels []string) (map[string]string, error) {
	lbl := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", l)
		}
		lbl[k] = v
	}
	return lbl, nil
}

// writeTarball writes through a temporary file, so an interrupted build never
// leaves a truncated tarball where a later `make e2e` would load it.
func writeTarball(out string, refs map[name.Reference]v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".image-*.tar")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tarball.MultiRefWrite(refs, tmp); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
