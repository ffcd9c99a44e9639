package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The client namespace: a network namespace of the harness's own, routed to
// the node through a veth pair of its own, where the tests stand as a
// machine on another network would, to reach Services through kube-proxy.
// The machine itself cannot: it routes the Service range to unreachable. The
// node forwards between the pair and its bridge, and only there: the two
// interfaces' forwarding is on, the machine's is left as it is, and the
// nftables table clientTable drops whatever else the bridge's Pods would
// have forwarded.
const (
	// ClientAddress is the client's address; clientGateway, the node's end.
	ClientAddress = "10.201.1.2"
	clientGateway = "10.201.1.1"
	clientPrefix  = "30"
	// clientLink is the node's end of the client's veth pair.
	clientLink = "vmctl-client"
	// clientTable is the nftables table that keeps the forwarding to the
	// client's traffic; cleanup sweeps it with the node's other new tables.
	clientTable = "vmctl-client"
)

// clientNetns is where the client namespace is bound: a private mount of its
// own (a namespace cannot be bound on the node's shared mount), under the
// node's directory, so the node's unmount removes it, and with it the veth.
func (n *Node) clientNetns() string { return filepath.Join(n.Dir, "netns", "client") }

// DialFromClient opens a connection from the client namespace, made on first
// use: use it as an http.Transport's DialContext to reach a Service's
// ClusterIP as a client outside the cluster's Pods would.
func (n *Node) DialFromClient(ctx context.Context, network, addr string) (net.Conn, error) {
	n.clientOnce.Do(func() { n.clientErr = n.makeClient(ctx) })
	if n.clientErr != nil {
		return nil, n.clientErr
	}
	// A socket belongs to the namespace of the thread that makes it: make it
	// on a locked thread switched to the client's namespace, then switch back.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer func() { _ = own.Close() }()
	client, err := os.Open(n.clientNetns())
	if err != nil {
		return nil, err
	}
	defer func() { _ = client.Close() }()
	if err := unix.Setns(int(client.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter the client namespace: %w", err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, addr)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread cannot go back: UnlockOSThread is skipped on purpose,
		// so the runtime ends the thread instead of reusing it.
		runtime.LockOSThread()
		return nil, fmt.Errorf("leave the client namespace: %w", err)
	}
	return conn, dialErr
}

// makeClient creates the client namespace: a veth pair from the bridge, the
// client's end with ClientAddress and a default route through the node.
func (n *Node) makeClient(ctx context.Context) error {
	dir := filepath.Dir(n.clientNetns())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s a private mount: %w", dir, err)
	}
	if err := os.WriteFile(n.clientNetns(), nil, 0o644); err != nil {
		return err
	}
	// unshare binds the new namespace at the path; the sleep holds it while
	// the veth's end moves in by the sleep's pid.
	holder := exec.CommandContext(ctx, "unshare", "--net="+n.clientNetns(), "--", "sleep", "300")
	if err := holder.Start(); err != nil {
		return fmt.Errorf("create the client namespace: %w", err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	if err := waitExec(ctx, holder.Process.Pid, "sleep"); err != nil {
		return fmt.Errorf("create the client namespace: %w", err)
	}
	pid := strconv.Itoa(holder.Process.Pid)
	inside := []string{"nsenter", "--net=" + n.clientNetns(), "ip"}
	for _, args := range [][]string{
		{"ip", "link", "add", clientLink, "type", "veth", "peer", "name", "eth0", "netns", pid},
		{"ip", "addr", "add", clientGateway + "/" + clientPrefix, "dev", clientLink},
		{"ip", "link", "set", clientLink, "up"},
		{"nft", "add", "table", "inet", clientTable},
		{"nft", "add", "chain", "inet", clientTable, "forward", "{ type filter hook forward priority 0; policy accept; }"},
		{"nft", "add", "rule", "inet", clientTable, "forward", "iifname", Bridge, "oifname", "!=", clientLink, "drop"},
		{"sysctl", "-qw", "net.ipv4.conf." + clientLink + ".forwarding=1", "net.ipv4.conf." + Bridge + ".forwarding=1"},
		append(inside, "addr", "add", ClientAddress+"/"+clientPrefix, "dev", "eth0"),
		append(inside, "link", "set", "eth0", "up"),
		append(inside, "link", "set", "lo", "up"),
		append(inside, "route", "add", "default", "via", clientGateway),
	} {
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("set up the client namespace: %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// waitExec waits until process pid runs program name: unshare has made and
// bound the namespace by the time it runs its command.
func waitExec(ctx context.Context, pid int, name string) error {
	for {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil {
			return fmt.Errorf("unshare exited: %w", err)
		}
		if filepath.Base(exe) == name {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
