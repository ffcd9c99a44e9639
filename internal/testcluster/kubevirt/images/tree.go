package images

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// removeTree removes a tree built here, unmounting first what a killed
// debootstrap left mounted in it (/proc, /sys, device nodes bound from the
// host), so that removing it never reaches the host's files.
func removeTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved // the mount table has real paths
	}
	if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, m := range mountsUnder(string(info), abs) {
			if out, err := exec.Command("umount", "--lazy", m).CombinedOutput(); err != nil {
				return fmt.Errorf("unmount %s to remove %s: %w: %s; unmount it by hand", m, dir, err, out)
			}
		}
	}
	return os.RemoveAll(dir)
}

// mountsUnder lists the mount points of mountinfo (as /proc/self/mountinfo
// reads) that are dir or inside it, the innermost first, so that each can
// be unmounted in turn.
func mountsUnder(mountinfo, dir string) []string {
	var under []string
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			under = append(under, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	return under
}

// unescapeMount decodes the octal escapes (\040 for a space) of a path in
// the mount table.
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
