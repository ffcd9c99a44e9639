package guest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestModinfoDepends(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modinfo string
		want    []string
	}{
		{"several", "license=GPL\x00depends=virtio_ring,virtio,net_failover\x00retpoline=Y\x00name=virtio_net\x00", []string{"virtio_ring", "virtio", "net_failover"}},
		{"none", "license=GPL\x00depends=\x00name=virtio_ring\x00", nil},
		{"dashes", "depends=virtio-rng\x00", []string{"virtio_rng"}},
		{"no field", "name=evdev\x00", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := modinfoDepends([]byte(tc.modinfo)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("modinfoDepends: %q, want %q", got, tc.want)
			}
		})
	}
}

func TestModuleName(t *testing.T) {
	for file, want := range map[string]string{
		"kernel/drivers/net/virtio_net.ko":               "virtio_net",
		"kernel/drivers/char/hw_random/virtio-rng.ko":    "virtio_rng",
		"kernel/drivers/tty/serial/8250/8250_base.ko":    "8250_base",
		"kernel/drivers/virtio/virtio_pci_modern_dev.ko": "virtio_pci_modern_dev",
	} {
		if got := moduleName(file); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", file, got, want)
		}
	}
}

// deps is the dependency graph of Debian 12's kernel 6.1 for the guest's
// modules, as their .modinfo says.
var guestDeps = map[string][]string{
	"virtio_pci":            {"virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio"},
	"virtio_net":            {"virtio_ring", "virtio", "net_failover"},
	"virtio_blk":            {"virtio", "virtio_ring"},
	"net_failover":          {"failover"},
	"virtio":                {"virtio_ring"},
	"button":                nil,
	"evdev":                 nil,
	"failover":              nil,
	"virtio_ring":           nil,
	"virtio_pci_modern_dev": nil,
	"virtio_pci_legacy_dev": nil,
}

func lookup(name string) ([]string, error) {
	d, ok := guestDeps[name]
	if !ok {
		return nil, errors.New("no module " + name)
	}
	return d, nil
}

func TestLoadOrderPutsEachModuleOnceAfterItsDependencies(t *testing.T) {
	got, err := loadOrder(guestModules(), nil, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio", "virtio_pci",
		"failover", "net_failover", "virtio_net", "virtio_blk", "button", "evdev"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("load order\n%q\nwant\n%q", got, want)
	}
}

func TestLoadOrderSkipsBuiltinModules(t *testing.T) {
	// Another kernel may build virtio in: then neither it nor the dependencies
	// only it has are loaded.
	got, err := loadOrder([]string{"virtio_net"}, map[string]bool{"virtio": true, "virtio_ring": true}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"failover", "net_failover", "virtio_net"}; !reflect.DeepEqual(got, want) {
		t.Errorf("load order %q, want %q", got, want)
	}
}

func TestLoadOrderRefuses(t *testing.T) {
	if _, err := loadOrder([]string{"virtio_gpu"}, nil, lookup); err == nil || !strings.Contains(err.Error(), "virtio_gpu") {
		t.Errorf("a missing module: error %v, want one naming it", err)
	}
	cycle := func(name string) ([]string, error) {
		return map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}[name], nil
	}
	if _, err := loadOrder([]string{"a"}, nil, cycle); err == nil || !strings.Contains(err.Error(), "a -> b -> c -> a") {
		t.Errorf("a cycle: error %v, want one naming a -> b -> c -> a", err)
	}
}
