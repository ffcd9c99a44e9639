package guest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// guestModules are the modules the guest loads, each after what it depends
// on: the virtio NIC of KubeVirt's interface (virtio_net over virtio_pci), the
// virtio disk of a data volume (virtio_blk), the ACPI power button, and the
// event devices busybox acpid reads the button from. Debian builds them as
// modules; one built into the kernel is skipped.
func guestModules() []string {
	return []string{"virtio_pci", "virtio_net", "virtio_blk", "button", "evdev"}
}

// module is a kernel module to load: its name, file and content.
type module struct {
	Name, File string
	Data       []byte
}

// kernelModules returns the modules of roots and all they depend on, in an
// order insmod can load them, from modules dir (lib/modules/<release>) of an
// unpacked kernel package, which has no modules.dep: depmod writes it on
// install, so the dependencies come from each module's .modinfo instead.
func kernelModules(dir string, roots []string) ([]module, error) {
	files, err := moduleFiles(dir)
	if err != nil {
		return nil, err
	}
	builtin, err := builtinModules(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	names, err := loadOrder(roots, builtin, func(name string) ([]string, error) {
		file, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("kernel module %s is neither in %s nor built in; pick a kernel that has it", name, dir)
		}
		return moduleDepends(filepath.Join(dir, file))
	})
	if err != nil {
		return nil, err
	}
	mods := make([]module, len(names))
	for i, n := range names {
		file := filepath.Join(dir, files[n])
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read kernel module %s: %w", n, err)
		}
		mods[i] = module{Name: n, File: file, Data: data}
	}
	return mods, nil
}

// moduleName is the name the kernel knows a module file by: its base name
// without .ko, dashes as underscores.
func moduleName(file string) string {
	return strings.ReplaceAll(strings.TrimSuffix(path.Base(file), ".ko"), "-", "_")
}

// moduleFiles maps each module's name to its file, relative to dir.
func moduleFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ko") {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[moduleName(p)] = rel
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list the kernel's modules: %w", err)
	}
	return files, nil
}

// builtinModules reads modules.builtin: the modules compiled into the kernel,
// one path a line.
func builtinModules(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the kernel's built-in modules: %w", err)
	}
	builtin := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			builtin[moduleName(line)] = true
		}
	}
	return builtin, nil
}

// moduleDepends reads the modules a module file depends on from its .modinfo
// section.
func moduleDepends(file string) ([]string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read kernel module %s: %w", file, err)
	}
	defer func() { _ = f.Close() }()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("kernel module %s has no .modinfo section", file)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read the .modinfo of %s: %w", file, err)
	}
	return modinfoDepends(data), nil
}

// modinfoDepends parses a .modinfo section, NUL-separated key=value strings,
// for its comma-separated depends= list.
func modinfoDepends(modinfo []byte) []string {
	for _, kv := range bytes.Split(modinfo, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, moduleName(d))
				}
			}
			return deps
		}
	}
	return nil
}

// loadOrder returns roots and their dependencies (depends gives a module's
// direct ones), each module once and after all it depends on; builtin modules
// are left out, as the kernel has them already.
func loadOrder(roots []string, builtin map[string]bool, depends func(string) ([]string, error)) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		switch {
		case builtin[name] || state[name] == 2:
			return nil
		case state[name] == 1:
			return fmt.Errorf("kernel modules depend on each other in a cycle: %s", strings.Join(append(chain, name), " -> "))
		}
		state[name] = 1
		deps, err := depends(name)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(chain[:len(chain):len(chain)], name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, r := range roots {
		if err := visit(moduleName(r), nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
