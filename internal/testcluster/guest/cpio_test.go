package guest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// TestWriteCpioNewc holds the archive to the newc format byte for byte: a
// 110-byte header of 8-digit hex fields, the name with its NUL, the data,
// each padded to 4 bytes, and the trailer.
func TestWriteCpioNewc(t *testing.T) {
	var buf bytes.Buffer
	if err := writeCpio(&buf, []cpioEntry{{Name: "/init", Mode: typeRegular | 0o755, Data: []byte("hi\n")}}); err != nil {
		t.Fatal(err)
	}
	want := "070701" + "00000001" + "000081ED" + "00000000" + "00000000" + "00000001" + "00000000" + "00000003" +
		"00000000" + "00000000" + "00000000" + "00000000" + "00000005" + "00000000" + "init\x00" + "\x00" + "hi\n" + "\x00" +
		"070701" + "00000000" + "00000000" + "00000000" + "00000000" + "00000001" + "00000000" + "00000000" +
		"00000000" + "00000000" + "00000000" + "00000000" + "0000000B" + "00000000" + "TRAILER!!!\x00" + "\x00\x00\x00"
	if got := buf.String(); got != want {
		t.Errorf("archive\n%q\nwant\n%q", got, want)
	}
}

func TestWriteCpioRefusesEntriesWithoutType(t *testing.T) {
	if err := writeCpio(io.Discard, []cpioEntry{{Name: "init", Mode: 0o755}}); err == nil {
		t.Error("an entry without a file type: no error")
	}
}

// TestWriteInitramfsReadsBackWithCpio lists the gzip'd archive with another
// reader, the cpio tool (GNU's or busybox's), where the machine has one.
func TestWriteInitramfsReadsBackWithCpio(t *testing.T) {
	var cpio []string
	if p, err := exec.LookPath("cpio"); err == nil {
		cpio = []string{p}
	} else if p, err := exec.LookPath("busybox"); err == nil {
		cpio = []string{p, "cpio"}
	} else {
		ci.Skip(t, "no cpio or busybox to read the archive back: hack/node-deps.sh installs cpio")
	}
	var buf bytes.Buffer
	err := writeInitramfs(&buf, []cpioEntry{
		{Name: "bin", Mode: typeDir | 0o755},
		{Name: "bin/busybox", Mode: typeRegular | 0o755, Data: []byte("not really busybox")},
		{Name: "bin/sh", Mode: typeSymlink | 0o777, Data: []byte("busybox")},
		{Name: "etc", Mode: typeDir | 0o755},
		{Name: "etc/modules", Mode: typeRegular | 0o644, Data: []byte("a.ko\nb.ko\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(cpio[0], append(cpio[1:], "-i", "-d")...)
	cmd.Dir, cmd.Stdin = dir, zr
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s -i -d: %v\n%s", strings.Join(cpio, " "), err, out)
	}
	for name, want := range map[string]string{"bin/busybox": "not really busybox", "etc/modules": "a.ko\nb.ko\n"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want %q", name, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin/busybox")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/busybox mode %v (%v), want 0755", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "bin/sh")); err != nil || target != "busybox" {
		t.Errorf("bin/sh links to %q (%v), want busybox", target, err)
	}
}
