package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node's fixed names on the machine; the machine-wide lock (LockFile)
// keeps two nodes from sharing them.
const (
	// Bridge is the node's bridge; its address is the node's (Address).
	Bridge = "vmctl0"
	// Subnet holds the node's address and its Pods' addresses.
	Subnet = "10.201.0.0/24"
	// Address is the node's InternalIP: the bridge's address, where the
	// kubelet serves and Pods reach the API server through kube-proxy.
	Address = "10.201.0.1"
	// ServiceCIDR is the cluster's Service range (testcluster's
	// --service-cluster-ip-range), routed to unreachable while the node runs.
	ServiceCIDR = "10.96.0.0/16"
	// CgroupRoot is the kubelet's cgroup root (not /kubepods), in every
	// hierarchy.
	CgroupRoot = "/vmctl-testcluster-node"
	// LockFile is taken for as long as a node runs on the machine.
	LockFile = "/run/lock/vmctl-testcluster-node.lock"
	// StateFile records what a running node changed on the machine, so the
	// next Start can sweep a node whose process was killed.
	StateFile = "/run/lock/vmctl-testcluster-node.json"
	// proxyTable is the nftables table kube-proxy's nftables mode owns.
	proxyTable = "kube-proxy"
)

// kubeletSysctls are the kernel settings the kubelet sets at start
// (pkg/kubelet/cm setupKernelTunables); Stop puts back what was there.
var kubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// machineDirs are folders of the machine that containerd or the CNI plugins
// create when missing (shim sockets' parent, CNI's result cache); Stop removes
// them again if they were not there and hold nothing but empty folders.
var machineDirs = []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet"}

// devicePluginDir is where the kubelet and device plugins meet, whatever the
// kubelet's --root-dir: the kubelet's socket, its checkpoint of the devices
// it was given, the plugins' sockets. Stop removes what the node left there:
// a later node's kubelet would otherwise read the checkpoint and zero the
// resources of plugins that no longer run.
const devicePluginDir = "/var/lib/kubelet/device-plugins"

// hostState is what a node changed on the machine, written to StateFile.
type hostState struct {
	Dir         string            `json:"dir"`
	Shim        string            `json:"shim"`
	Sysctls     map[string]string `json:"sysctls"`
	CreatedDirs []string          `json:"createdDirs"`
	// DevicePluginFiles were in devicePluginDir before the node started.
	DevicePluginFiles []string `json:"devicePluginFiles"`
	NftTables         []string `json:"nftTables"`
}

func readState() (*hostState, error) {
	data, err := os.ReadFile(StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s hostState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("read %s: %w; remove it if no node runs", StateFile, err)
	}
	return &s, nil
}

func (s *hostState) write() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(StateFile, data, 0o644)
}

// recordState notes what is on the machine before the node changes it.
func recordState(dir, shim string) (*hostState, error) {
	s := &hostState{Dir: dir, Shim: shim, Sysctls: map[string]string{}}
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", k, err)
		}
		s.Sysctls[k] = strings.TrimSpace(string(v))
	}
	for _, d := range machineDirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			s.CreatedDirs = append(s.CreatedDirs, d)
		}
	}
	if entries, err := os.ReadDir(devicePluginDir); err == nil {
		for _, e := range entries {
			s.DevicePluginFiles = append(s.DevicePluginFiles, e.Name())
		}
	}
	tables, err := nftTables()
	if err != nil {
		return nil, err
	}
	s.NftTables = tables
	return s, s.write()
}

// preflight refuses to start where the node's names are taken by something
// that is not a node of ours: it never touches what it did not make.
func preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("a real node needs root (containerd, the kubelet, a bridge and nftables)")
	}
	var errs []error
	// The client's veth goes with its namespace, unless a connection still
	// holds the namespace; the kernel removes it after the unmount, so it
	// may be gone by the time it is deleted here.
	if _, err := os.Stat(filepath.Join("/sys/class/net", clientLink)); err == nil {
		if _, err := run("ip", "link", "del", clientLink); err != nil && linkExists(clientLink) {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", Bridge)); err == nil {
		errs = append(errs, fmt.Errorf("network interface %s exists and is not this harness's (no %s); remove it (ip link del %s) if it is a leftover", Bridge, StateFile, Bridge))
	}
	if out, err := run("ip", "-4", "route", "show", "match", Address); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" && !strings.HasPrefix(line, "default") {
				errs = append(errs, fmt.Errorf("the machine already routes %s (%s); the node's subnet %s would clash", Address, line, Subnet))
			}
		}
	}
	if out, err := run("ip", "-4", "route", "show", "root", ServiceCIDR); err == nil && strings.TrimSpace(out) != "" {
		errs = append(errs, fmt.Errorf("the machine already routes part of the Service range %s: %s", ServiceCIDR, strings.TrimSpace(out)))
	}
	tables, err := nftTables()
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range tables {
		if strings.HasSuffix(t, " "+proxyTable) {
			errs = append(errs, fmt.Errorf("nftables table %q exists: another kube-proxy runs on this machine", t))
		}
	}
	for _, ipt := range []string{"iptables-save", "ip6tables-save"} {
		out, err := run(ipt)
		if err != nil {
			continue // no iptables at all: nothing to clash with
		}
		if strings.Contains(out, ":KUBE-") {
			errs = append(errs, fmt.Errorf("%s shows KUBE-* chains: a kubelet or kube-proxy runs (or ran) on this machine outside this harness", ipt))
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/pids", CgroupRoot)); err == nil {
		errs = append(errs, fmt.Errorf("cgroup %s exists and is not this harness's", CgroupRoot))
	}
	return errors.Join(errs...)
}

// nftTables lists the machine's nftables tables as "family name".
func nftTables() ([]string, error) {
	out, err := run("nft", "list", "tables")
	if err != nil {
		return nil, fmt.Errorf("list nftables tables (is nftables installed? hack/node-deps.sh): %w", err)
	}
	var tables []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	sort.Strings(tables)
	return tables, nil
}

// cleanup removes everything a node made on the machine, as s records it,
// whether or not it is still running: container processes and shims, mounts,
// the bridge, the Service route, nftables and iptables state, cgroups,
// sysctls, and the node's directory. The daemons must be stopped first.
func cleanup(s *hostState) error {
	var errs []error
	errs = append(errs, killCgroupProcesses())
	if s.Shim != "" {
		errs = append(errs, killByExe(s.Shim))
	}
	if s.Dir != "" {
		// Loops first: their backing files are found by their paths under
		// s.Dir, which an unmount there takes away.
		errs = append(errs, detachLoopsUnder(s.Dir), unmountUnder(s.Dir), removeCNICache(s.Dir))
	}
	// The client's veth goes with its namespace, unless a connection still
	// holds the namespace; the kernel removes it after the unmount, so it
	// may be gone by the time it is deleted here.
	if _, err := os.Stat(filepath.Join("/sys/class/net", clientLink)); err == nil {
		if _, err := run("ip", "link", "del", clientLink); err != nil && linkExists(clientLink) {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", Bridge)); err == nil {
		if _, err := run("ip", "link", "del", Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if out, _ := run("ip", "-4", "route", "show", "type", "unreachable", ServiceCIDR); strings.TrimSpace(out) != "" {
		if _, err := run("ip", "route", "del", "unreachable", ServiceCIDR); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeKubeletChains(), removeNewNftTables(s.NftTables))
	errs = append(errs, removeCgroups())
	for k, v := range s.Sysctls {
		p := filepath.Join("/proc/sys", k)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", k, v, err))
		}
	}
	errs = append(errs, removeNewFiles(devicePluginDir, s.DevicePluginFiles))
	for _, d := range s.CreatedDirs {
		removeEmptyTree(d)
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove the node's directory: %w", err))
		}
	}
	err := errors.Join(errs...)
	if err == nil {
		_ = os.Remove(StateFile)
	}
	return err
}

// removeNewFiles removes the entries of dir that are not in before.
func removeNewFiles(dir string, before []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		if !slices.Contains(before, e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// CgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers and
// the v2 one).
func CgroupHierarchies() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			dirs = append(dirs, unescapeMount(fields[4]))
		}
	}
	return dirs
}

// killCgroupProcesses SIGKILLs every process under CgroupRoot, the node's
// containers, until none is left.
func killCgroupProcesses() error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids := map[int]bool{}
		for _, h := range CgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, CgroupRoot), func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				if err != nil {
					return nil
				}
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids[pid] = true
					}
				}
				return nil
			})
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still in cgroup %s after SIGKILL: %v", CgroupRoot, pids)
		}
		for pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killByExe SIGKILLs the processes running exe (the node's containerd shims,
// which outlive containerd by design) and waits for them to go. The kernel
// names a process's executable by its resolved path, so exe is resolved too:
// a cache reached through a symlink would otherwise match nothing.
func killByExe(exe string) error {
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && strings.TrimSuffix(target, " (deleted)") == exe {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still runs as %v after SIGKILL", exe, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shareMounts bind-mounts dir onto itself with shared propagation, as a
// node's root is on most machines (systemd makes / shared): Pods' volumes
// with Bidirectional propagation, such as virt-handler's, need their host
// paths on a shared mount, and this machine's / is private. cleanup's
// unmountUnder removes the mount with the rest.
func shareMounts(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount the node's directory %s onto itself: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("make the node's directory %s a shared mount: %w", dir, err)
	}
	return nil
}

// unmountUnder detaches every mount at or below dir, deepest first: the
// kubelet's volumes, containerd's rootfs overlays and network namespaces.
func unmountUnder(dir string) error {
	dir = filepath.Clean(dir)
	var errs []error
	for range 5 {
		mounts := mountsUnder(dir)
		if len(mounts) == 0 {
			return nil
		}
		sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
		errs = errs[:0]
		for _, m := range mounts {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			}
		}
	}
	if left := mountsUnder(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted under %s: %s", dir, strings.Join(left, " ")))
	}
	return errors.Join(errs...)
}

func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if m := unescapeMount(fields[4]); m == dir || strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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

// removeKubeletChains deletes the iptables chains the kubelet creates
// (pkg/kubelet/kubelet_network_linux.go) and the rules that jump to them.
func removeKubeletChains() error {
	var errs []error
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if _, err := run(ipt + "-save"); err != nil {
			continue
		}
		for _, builtin := range []string{"INPUT", "OUTPUT"} {
			for {
				if _, err := run(ipt, "-w", "-t", "filter", "-D", builtin, "-j", "KUBE-FIREWALL"); err != nil {
					break
				}
			}
		}
		for table, chains := range map[string][]string{
			"filter": {"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"},
			"nat":    {"KUBE-KUBELET-CANARY"},
			"mangle": {"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"},
		} {
			for _, c := range chains {
				if _, err := run(ipt, "-w", "-t", table, "-L", c, "-n"); err != nil {
					continue
				}
				if _, err := run(ipt, "-w", "-t", table, "-F", c); err != nil {
					errs = append(errs, err)
				}
				if _, err := run(ipt, "-w", "-t", table, "-X", c); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// removeNewNftTables deletes kube-proxy's table, the client namespace's
// (clientTable), and the tables that did not exist before the node started
// (iptables-nft makes ip filter, nat and mangle for the kubelet's chains)
// once they hold no rule.
func removeNewNftTables(before []string) error {
	tables, err := nftTables()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tables {
		family, name, _ := strings.Cut(t, " ")
		ours := name == proxyTable || name == clientTable
		if !ours && slices.Contains(before, t) {
			continue
		}
		if !ours {
			out, err := run("nft", "-a", "list", "table", family, name)
			if err != nil || hasRules(out) {
				continue
			}
		}
		if _, err := run("nft", "delete", "table", family, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hasRules reports whether an `nft -a list table` output holds a rule, not
// just chain declarations.
func hasRules(listing string) bool {
	for _, line := range strings.Split(listing, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "table ") || strings.HasPrefix(l, "chain ") || strings.HasPrefix(l, "type ") || l == "}" {
			continue
		}
		return true
	}
	return false
}

// removeCgroups removes CgroupRoot from every hierarchy, deepest first.
func removeCgroups() error {
	var errs []error
	for _, h := range CgroupHierarchies() {
		root := filepath.Join(h, CgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for range 50 { // a cgroup empties a moment after its last process died
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// cniCacheDir is where libcni caches each attachment's result, whatever the
// runtime's configuration says.
const cniCacheDir = "/var/lib/cni/results"

// removeCNICache deletes the cached results of the node's attachments (the
// node's network and containerd's loopback ones name the sandbox's network
// namespace under dir) that a sandbox killed without a CNI DEL leaves.
func removeCNICache(dir string) error {
	entries, err := os.ReadDir(cniCacheDir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(cniCacheDir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), dir+"/") {
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeEmptyTree removes dir if it holds nothing but empty folders.
func removeEmptyTree(dir string) {
	empty := true
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			empty = false
			return filepath.SkipAll
		}
		return nil
	})
	if empty {
		_ = os.RemoveAll(dir)
	}
}

// createCgroupRoot makes CgroupRoot in every hierarchy before the kubelet
// starts, which it requires ("cgroup ... has some missing paths"); a cpuset
// cgroup needs cpus and mems before it can hold anything.
func createCgroupRoot() error {
	for _, h := range CgroupHierarchies() {
		dir := filepath.Join(h, CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("copy %s into cgroup %s: %w", f, dir, err)
			}
		}
	}
	return nil
}
