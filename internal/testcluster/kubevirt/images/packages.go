package images

// Debian release, mirror and keyring the images are built from. The keyring
// is the debian-archive-keyring package's, so debootstrap checks what it
// downloads.
const (
	suite   = "bookworm"
	mirror  = "http://deb.debian.org/debian"
	keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
)

// packages are what debootstrap adds to its minimal base, whose required
// set already has bash, coreutils, grep, tar, passwd (useradd) and
// util-linux (findmnt, mount, setpriv). Each stands for RPMs of KubeVirt's
// launcherbase and handlerbase (rpm/BUILD.bazel); what KubeVirt's images
// have that is missing here serves features the harness does not use:
// edk2-ovmf (EFI guests), swtpm (vTPM), virtiofsd (shared file systems),
// passt-repair (passt migration; Debian 12's passt predates it).
var packages = []string{
	"qemu-system-x86", // qemu-kvm: the emulator, run under TCG here; its firmware (seabios, ipxe) comes with it
	"libvirt-daemon",  // libvirtd (behind the virtqemud shim), virtlogd and the qemu driver
	"libvirt-clients", // virsh, which node-labeller.sh runs
	"qemu-utils",      // qemu-img: virt-launcher's disk resizes, empty and ephemeral disks
	"xorriso",         // xorrisofs: cloud-init and config drive ISOs
	"libcap2-bin",     // setcap, for the file capabilities KubeVirt's images carry
	"nftables",        // nft: virt-handler's rules for masquerade networking
	"procps",          // sysctl, which virt-handler's node labeller runs
	"iproute2",        // ip and tc, as KubeVirt's iproute and iproute-tc
	"passt",           // the passt network binding's backend
}

// capabilityFiles get cap_net_bind_service, as KubeVirt's images give it to
// virt-launcher-monitor and qemu-kvm: a launcher running as non-root passes
// it on as an ambient capability, which it must hold to do so.
var capabilityFiles = []string{"/usr/bin/virt-launcher-monitor", "/usr/bin/qemu-system-x86_64"}

// trimmed are what the images need none of: apt's downloads and package
// lists (nothing is installed later), manuals and translations. Licence
// files stay (trimDocs).
var trimmed = []string{
	"var/cache/apt/archives",
	"var/cache/apt/pkgcache.bin",
	"var/cache/apt/srcpkgcache.bin",
	"var/lib/apt/lists",
	"usr/share/man",
	"usr/share/info",
	"usr/share/locale",
}
