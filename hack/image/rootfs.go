package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/klauspost/compress/gzip"
)

// RootfsPath is the PATH of a rootfs image's config, as Debian's own images
// set it: a shell in the image (`/bin/sh -c node-labeller.sh`) finds its
// commands by it.
const RootfsPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RootfsImage is one image of a rootfs: its name and entrypoint ("" for
// none, so the Pod's command decides).
type RootfsImage struct {
	Name       name.Tag
	Entrypoint string
}

// RootfsSpec says what images RootfsImages makes of a layer that WriteLayer
// wrote.
type RootfsSpec struct {
	// Images share the one layer, so a runtime stores and unpacks it once.
	Images   []RootfsImage
	Platform v1.Platform
	// User is uid or uid:gid; "" is root, as in a distribution's images.
	User string
	// Created stamps the configs, as WriteLayer stamps the files.
	Created time.Time
	Labels  map[string]string
}

// WriteLayer writes the tree under dir to w as a gzipped layer tar whose root
// is the image's /, streaming it, so a tree of hundreds of MB is never held in
// memory. Each entry keeps its mode (setuid included), numeric owner, symlink
// target and file capability (security.capability, which a program such as
// virt-launcher-monitor needs to pass a capability on as a non-root user);
// files that share an inode become hard links. Every time is mtime, so the
// same tree always makes the same layer. Device nodes, sockets and fifos are
// left out: the runtime provides /dev, and the others only exist while a
// program runs.
func WriteLayer(w io.Writer, dir string, mtime time.Time) error {
	zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	inodes := map[[2]uint64]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, link, err := layerHeader(p, rel, fi, inodes)
		if err != nil || hdr == nil {
			return err
		}
		hdr.ModTime, hdr.Format = mtime, tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if hdr.Typeflag != tar.TypeReg || link {
			return nil
		}
		return copyFile(tw, p, hdr.Size)
	})
	if err != nil {
		return fmt.Errorf("write the layer of %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// layerHeader is the tar header of the file at p (rel in the image), nil for
// a kind the layer leaves out; link says it is a hard link to a file already
// written, recorded in inodes.
func layerHeader(p, rel string, fi fs.FileInfo, inodes map[[2]uint64]string) (*tar.Header, bool, error) {
	var target string
	switch {
	case fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket|fs.ModeNamedPipe) != 0:
		return nil, false, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(p)
		if err != nil {
			return nil, false, err
		}
		target = t
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", rel, err)
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	// Owners by number only, and no access or change times: the layer
	// depends on the tree, not on the building host's users or clock.
	hdr.Uname, hdr.Gname = "", ""
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, false, fmt.Errorf("%s: no owner to read on this system; build rootfs images on Linux", rel)
	}
	hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	if hdr.Typeflag != tar.TypeReg {
		return hdr, false, nil
	}
	if st.Nlink > 1 {
		key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if first, seen := inodes[key]; seen {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			return hdr, true, nil
		}
		inodes[key] = rel
	}
	capability, err := fileCapability(p)
	if err != nil {
		return nil, false, fmt.Errorf("%s: read its file capability: %w", rel, err)
	}
	if capability != nil {
		hdr.PAXRecords = map[string]string{"SCHILY.xattr." + capabilityXattr: string(capability)}
	}
	return hdr, false, nil
}

// capabilityXattr holds a file's capabilities (setcap); runtimes apply it
// from the PAX record SCHILY.xattr.security.capability.
const capabilityXattr = "security.capability"

func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	// Exactly size bytes: a file that grew since the walk stat'ed it would
	// otherwise break the tar stream.
	if _, err := io.CopyN(w, f, size); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// RootfsImages makes s.Images of layer: one image each, with layer as its one
// layer, on an empty base, and a config with the entrypoint, user, PATH
// (RootfsPath) and labels.
func RootfsImages(layer v1.Layer, s RootfsSpec) (map[name.Reference]v1.Image, error) {
	if len(s.Images) == 0 {
		return nil, errors.New("a rootfs needs at least one image name")
	}
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		return nil, errors.New("platform needs an os and an architecture, e.g. linux/amd64")
	}
	if s.User != "" {
		if err := checkUser(s.User); err != nil {
			return nil, err
		}
	}
	base, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "hack/image build -rootfs", Comment: "a whole root file system"},
	})
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, err
	}
	imgs := map[name.Reference]v1.Image{}
	for _, ri := range s.Images {
		if ri.Entrypoint != "" && !strings.HasPrefix(ri.Entrypoint, "/") {
			return nil, fmt.Errorf("entrypoint %q of %s must be an absolute path such as /usr/bin/virt-handler", ri.Entrypoint, ri.Name)
		}
		if _, dup := imgs[ri.Name]; dup {
			return nil, fmt.Errorf("image %s is given twice", ri.Name)
		}
		c := cf.DeepCopy()
		c.OS, c.Architecture, c.Variant, c.OSVersion = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant, s.Platform.OSVersion
		c.Created = v1.Time{Time: s.Created}
		c.Config.Entrypoint = nil
		if ri.Entrypoint != "" {
			c.Config.Entrypoint = []string{ri.Entrypoint}
		}
		c.Config.Cmd = nil
		c.Config.Env = []string{RootfsPath}
		c.Config.User = s.User
		c.Config.WorkingDir = "/"
		c.Config.Labels = s.Labels
		img, err := mutate.ConfigFile(base, c)
		if err != nil {
			return nil, fmt.Errorf("write the config of %s: %w", ri.Name, err)
		}
		imgs[ri.Name] = img
	}
	return imgs, nil
}
