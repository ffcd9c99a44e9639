package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Want is what Check expects of an image.
type Want struct {
	Platform v1.Platform
	User     string
	// Path is the entrypoint and the layer's only file ("" takes the
	// entrypoint as it is).
	Path string
	// Binary, when set, must be the layer's file byte for byte.
	Binary []byte
	// Programs are the other static executables the layer must hold, and
	// may hold besides the entrypoint (Spec.Programs).
	Programs []string
}

// Check verifies an image as Build makes it: the platform; a config whose
// entrypoint is exactly one absolute path, with no cmd and the wanted
// non-root user; one layer holding that path and want.Programs as regular
// files, mode 0755, owned by root, and nothing else but their parent
// directories; each a static ELF executable for the platform.
func Check(img v1.Image, want Want) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read the config: %w", err)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	got := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if got.String() != want.Platform.String() {
		bad("platform is %s, want %s", got.String(), want.Platform.String())
	}
	if cf.Config.User != want.User {
		bad("user is %q, want %q", cf.Config.User, want.User)
	}
	if uid, _, _ := strings.Cut(cf.Config.User, ":"); uid == "0" || uid == "" || uid == "root" {
		bad("user %q is root; Pods with runAsNonRoot would not start", cf.Config.User)
	}
	entry := cf.Config.Entrypoint
	if len(entry) != 1 || !strings.HasPrefix(entry[0], "/") {
		bad("entrypoint is %q, want one absolute path, so the Pod's args follow it", entry)
		return errors.Join(errs...)
	}
	if want.Path != "" && entry[0] != want.Path {
		bad("entrypoint is %q, want %q", entry[0], want.Path)
	}
	if len(cf.Config.Cmd) > 0 {
		bad("cmd is %q, want none: the Pod's args are the only arguments", cf.Config.Cmd)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("read the layers: %w", err)
	}
	if len(layers) != 1 {
		bad("%d layers, want 1", len(layers))
		return errors.Join(errs...)
	}
	files, err := layerFiles(layers[0], append([]string{entry[0]}, want.Programs...))
	if err != nil {
		bad("layer: %w", err)
		return errors.Join(errs...)
	}
	if want.Binary != nil && !bytes.Equal(files[entry[0]], want.Binary) {
		bad("%s in the layer (%d bytes) differs from the binary it was built from (%d bytes)", entry[0], len(files[entry[0]]), len(want.Binary))
	}
	for _, f := range append([]string{entry[0]}, want.Programs...) {
		if err := checkStatic(files[f], want.Platform); err != nil {
			bad("%s: %w", f, err)
		}
	}
	return errors.Join(errs...)
}

// layerFiles returns the content of each of files, the layer's only
// regular files, each mode 0755 and root's.
func layerFiles(layer v1.Layer, files []string) (map[string][]byte, error) {
	rc, err := layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	contents := map[string][]byte{}
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		entry := "/" + strings.TrimSuffix(h.Name, "/")
		names = append(names, entry)
		switch {
		case h.Typeflag == tar.TypeDir && slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, entry+"/") }):
		case h.Typeflag == tar.TypeReg && slices.Contains(files, entry):
			if h.Mode&0o777 != 0o755 || h.Uid != 0 || h.Gid != 0 {
				return nil, fmt.Errorf("%s has mode %o owner %d:%d, want 755 and 0:0", entry, h.Mode&0o777, h.Uid, h.Gid)
			}
			if contents[entry], err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("holds %s besides %s", entry, strings.Join(files, " and "))
		}
	}
	for _, f := range files {
		if contents[f] == nil {
			return nil, fmt.Errorf("has no %s (entries: %s)", f, strings.Join(names, " "))
		}
	}
	return contents, nil
}

// elfMachines maps GOARCH to the ELF machine the kernel runs it as.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// checkStatic makes sure content runs in an image with nothing else in it: an
// ELF executable for the platform's architecture with no dynamic loader.
func checkStatic(content []byte, p v1.Platform) error {
	f, err := elf.NewFile(bytes.NewReader(content))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	if m, ok := elfMachines[p.Architecture]; ok && f.Machine != m {
		return fmt.Errorf("built for %s, not %s", f.Machine, p.Architecture)
	}
	if p.OS != "linux" {
		return fmt.Errorf("platform %s: only linux images are made", p.String())
	}
	if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		return errors.New("dynamically linked (it names a loader); build it with CGO_ENABLED=0")
	}
	return nil
}

func runCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	platform := fs.String("platform", "", "the platform the image must be for, e.g. linux/amd64 (required)")
	user := fs.String("user", DefaultUser, "the user the image must run as")
	inImage := fs.String("path", "", "the entrypoint, the image's only file but -program's (default: whatever the entrypoint is)")
	binary := fs.String("binary", "", "a binary the image's file must equal")
	remoteRef := fs.Bool("remote", false, "the argument is a multi-platform image in a registry, not a tarball: check its entry for -platform")
	insecure := fs.Bool("insecure", false, "with -remote: plain HTTP (a loopback rehearsal registry)")
	var tags, programs listFlag
	fs.Var(&tags, "tag", "a name the tarball must hold the image under (repeatable)")
	fs.Var(&programs, "program", "another static program the image must hold beside the entrypoint, its path (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *platform == "" || fs.NArg() != 1 {
		return errors.New("needs -platform and one tarball (or -remote and one image name); see image check -h")
	}
	p, err := parsePlatform(*platform)
	if err != nil {
		return err
	}
	want := Want{Platform: p, User: *user, Path: *inImage, Programs: programs}
	if *binary != "" {
		if want.Binary, err = os.ReadFile(*binary); err != nil {
			return err
		}
	}
	if *remoteRef {
		return checkRemote(fs.Arg(0), *insecure, want)
	}
	file := fs.Arg(0)
	if len(tags) == 0 {
		tags = append(tags, "")
	}
	var digest v1.Hash
	for _, t := range tags {
		var tag *name.Tag
		if t != "" {
			parsed, err := name.NewTag(t, name.StrictValidation)
			if err != nil {
				return fmt.Errorf("tag %q: %w", t, err)
			}
			tag = &parsed
		}
		img, err := tarball.ImageFromPath(file, tag)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := Check(img, want); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if digest, err = img.Digest(); err != nil {
			return err
		}
	}
	fmt.Printf("%s: ok %s %s %s\n", file, p.String(), strings.Join(tags, " "), digest)
	return nil
}

// checkRemote checks the entry for want.Platform of the index ref names.
func checkRemote(ref string, insecure bool, want Want) error {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return err
	}
	idx, err := remote.Index(r, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		platforms = append(platforms, d.Platform.String())
		if d.Platform.String() != want.Platform.String() {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := Check(img, want); err != nil {
			return fmt.Errorf("%s %s: %w", ref, d.Platform.String(), err)
		}
		fmt.Printf("%s: ok %s %s (index of %d)\n", ref, want.Platform.String(), d.Digest, len(m.Manifests))
		return nil
	}
	return fmt.Errorf("%s has no image for %s, only %s", ref, want.Platform.String(), strings.Join(platforms, " "))
}
