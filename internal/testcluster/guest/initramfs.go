package guest

import (
	_ "embed"
	"path/filepath"
	"strings"
)

// The guest's scripts, kept as shell files beside this one.
var (
	//go:embed init.sh
	initScript []byte
	//go:embed udhcpc.sh
	udhcpcScript []byte
	//go:embed power.sh
	powerScript []byte
	//go:embed busy.sh
	busyScript []byte
	//go:embed idle.sh
	idleScript []byte
)

// initramfsEntries lays out the guest's root file system: busybox (its
// applets are linked at boot by init.sh), the scripts (busy.sh and idle.sh
// as httpd's CGI programs under /www/cgi-bin), the modules flat in
// /lib/modules with /etc/modules listing them in load order, and a console
// device, which the kernel opens for /init before anything mounts /dev.
func initramfsEntries(busybox []byte, modules []module) []cpioEntry {
	dir := func(name string) cpioEntry { return cpioEntry{Name: name, Mode: typeDir | 0o755} }
	file := func(name string, mode uint32, data []byte) cpioEntry {
		return cpioEntry{Name: name, Mode: typeRegular | mode, Data: data}
	}
	entries := []cpioEntry{
		dir("bin"), dir("dev"), dir("etc"), dir("etc/acpi"), dir("etc/acpi/PWRF"),
		dir("lib"), dir("lib/modules"), dir("proc"), dir("run"), dir("sys"), dir("tmp"), dir("www"), dir("www/cgi-bin"),
		{Name: "dev/console", Mode: typeChar | 0o600, Major: 5, Minor: 1},
		file("bin/busybox", 0o755, busybox),
		{Name: "bin/sh", Mode: typeSymlink | 0o777, Data: []byte("busybox")},
		file("init", 0o755, initScript),
		file("etc/udhcpc.sh", 0o755, udhcpcScript),
		file("etc/acpi/PWRF/00000080", 0o755, powerScript),
		file("www/cgi-bin/busy", 0o755, busyScript),
		file("www/cgi-bin/idle", 0o755, idleScript),
	}
	var list strings.Builder
	for _, m := range modules {
		name := filepath.Base(m.File)
		list.WriteString(name + "\n")
		entries = append(entries, file("lib/modules/"+name, 0o644, m.Data))
	}
	return append(entries, file("etc/modules", 0o644, []byte(list.String())))
}
