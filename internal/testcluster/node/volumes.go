package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// VolumeDir makes the directory of a local PersistentVolume of Filesystem
// mode on the node, <Dir>/volumes/<name>, and returns its path: the node's
// Dir is shared with the kubelet's and containerd's mount namespaces, so
// the kubelet finds it, and it goes with the Dir. Any user may write it:
// KubeVirt's launcher, which writes its VM's disk.img there, runs as a
// user of its own, and a local volume keeps its directory's owner.
func (n *Node) VolumeDir(name string) (string, error) {
	dir := filepath.Join(n.Dir, "volumes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make the node's volume %s: %w", name, err)
	}
	// MkdirAll's mode is masked by the umask.
	if err := os.Chmod(dir, 0o777); err != nil {
		return "", fmt.Errorf("make the node's volume %s writable: %w", name, err)
	}
	return dir, nil
}

// VolumeDevice makes the block device of a local PersistentVolume of Block
// mode on the node: a loop device over a sparse file of size bytes,
// <Dir>/volumes/<name>.img, and returns the device's path. The node
// detaches it when it stops (detachLoopsUnder), or its next start does
// after a crash.
func (n *Node) VolumeDevice(name string, size int64) (string, error) {
	file := filepath.Join(n.Dir, "volumes", name+".img")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", fmt.Errorf("make the node's volume %s: %w", name, err)
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("make the node's volume %s: %w", name, err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("size the node's volume %s: %w", name, err)
	}
	out, err := run("losetup", "--find", "--show", file)
	if err != nil {
		return "", fmt.Errorf("attach the node's volume %s to a loop device: %w", name, err)
	}
	return strings.TrimSpace(out), nil
}

// detachLoopsUnder detaches every loop device whose backing file is under
// dir: the node's block volumes (VolumeDevice), and any the kubelet left
// over a block volume it mapped into a Pod. A device still in use is
// detached by the kernel once it is not (autoclear).
func detachLoopsUnder(dir string) error {
	out, err := run("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		dev, back, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(back, dir+string(filepath.Separator)) {
			continue
		}
		if _, err := run("losetup", "--detach", dev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
