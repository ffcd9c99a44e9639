package guest

import (
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// File types of a cpio entry's mode, as in stat(2).
const (
	typeDir     = 0o040000
	typeRegular = 0o100000
	typeSymlink = 0o120000
	typeChar    = 0o020000
)

// cpioEntry is a file of the initramfs. Data is a regular file's content or a
// symlink's target; Major and Minor are a device node's numbers.
type cpioEntry struct {
	Name         string
	Mode         uint32 // file type and permissions
	Data         []byte
	Major, Minor uint32
}

// writeInitramfs writes entries as the kernel unpacks an initramfs: a cpio
// archive in the "newc" format, gzip'd. Owners are root, times the epoch, so
// the same files always make the same archive.
func writeInitramfs(w io.Writer, entries []cpioEntry) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeCpio(zw, entries); err != nil {
		return err
	}
	return zw.Close()
}

// writeCpio writes entries and the trailer in the newc format
// (the kernel's Documentation/driver-api/early-userspace/buffer-format.rst):
// per entry a 110-byte ASCII header, the NUL-terminated name and the data,
// each padded to 4 bytes.
func writeCpio(w io.Writer, entries []cpioEntry) error {
	pad := func(n int) []byte { return make([]byte, (4-n%4)%4) }
	write := func(ino int, e cpioEntry) error {
		name := strings.TrimPrefix(e.Name, "/")
		nlink := 1
		if e.Mode&0o170000 == typeDir {
			nlink = 2
		}
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, e.Mode, 0, 0, nlink, 0, len(e.Data), 0, 0, e.Major, e.Minor, len(name)+1, 0)
		rec := append([]byte(hdr+name+"\x00"), pad(len(hdr)+len(name)+1)...)
		rec = append(append(rec, e.Data...), pad(len(e.Data))...)
		_, err := w.Write(rec)
		return err
	}
	for i, e := range entries {
		if e.Name == "" || e.Mode&0o170000 == 0 {
			return fmt.Errorf("initramfs entry %q needs a name and a file type", e.Name)
		}
		if err := write(i+1, e); err != nil {
			return err
		}
	}
	return write(0, cpioEntry{Name: "TRAILER!!!"})
}
