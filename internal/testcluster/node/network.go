package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// setupNetwork makes the node's bridge with its address, before the kubelet
// (which checks that its node IP is on the machine) and the CNI plugin (which
// attaches Pods to it), and routes the Service range to unreachable, so
// nothing sent to a Service address leaves the machine: only kube-proxy's
// rules, applied before routing, turn it into a Pod's or the node's address.
func (n *Node) setupNetwork() error {
	prefix := strings.SplitN(Subnet, "/", 2)[1]
	for _, args := range [][]string{
		{"link", "add", Bridge, "type", "bridge"},
		{"addr", "add", Address + "/" + prefix, "dev", Bridge},
		{"link", "set", Bridge, "up"},
		{"route", "add", "unreachable", ServiceCIDR},
	} {
		if _, err := run("ip", args...); err != nil {
			return fmt.Errorf("set up the node's network: %w", err)
		}
	}
	return n.writeCNIConfig()
}

// writeCNIConfig writes the node's only CNI network: Pods on Bridge with
// addresses from Subnet (host-local, its state under the node's directory),
// the node's address as their default gateway. isGateway stays off: the
// bridge already has its address, and the plugin would otherwise turn on IP
// forwarding machine-wide, which nothing here needs (Pods only talk to each
// other and to the node).
func (n *Node) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "vmctl-testcluster-node",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      Bridge,
				"isGateway":   false,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  []any{[]any{map[string]any{"subnet": Subnet, "gateway": Address}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0", "gw": Address}},
					"dataDir": filepath.Join(n.Dir, "cni", "ipam"),
				},
			},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Dir, "cni", "net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-vmctl.conflist"), data, 0o644)
}
