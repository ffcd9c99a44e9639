package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// capNetBindService is security.capability's value for
// cap_net_bind_service=ep (VFS_CAP_REVISION_2, effective, permitted bit 10).
func capNetBindService() []byte {
	v := make([]byte, 20)
	binary.LittleEndian.PutUint32(v[0:], 0x02000001)
	binary.LittleEndian.PutUint32(v[4:], 1<<10)
	return v
}

func TestWriteLayerKeepsFileCapabilities(t *testing.T) {
	dir := t.TempDir()
	monitor := filepath.Join(dir, "virt-launcher-monitor")
	if err := os.WriteFile(monitor, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setxattr(monitor, capabilityXattr, capNetBindService(), 0); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot set a file capability here (%v): needs root and a file system with attributes", err))
	}
	var buf bytes.Buffer
	if err := WriteLayer(&buf, dir, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	records := map[string]map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		records[h.Name] = h.PAXRecords
	}
	key := "SCHILY.xattr." + capabilityXattr
	if got := records["virt-launcher-monitor"][key]; got != string(capNetBindService()) {
		t.Errorf("virt-launcher-monitor's %s record is %q, want %q", key, got, capNetBindService())
	}
	if _, ok := records["plain"][key]; ok {
		t.Errorf("plain has a %s record, but no capability", key)
	}
}
