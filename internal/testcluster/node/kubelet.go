package node

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// kubeletConfig is the KubeletConfiguration: the cluster's CA for client
// certificates and webhook authorization (the API server's own client
// certificate gets `kubectl logs` and `exec` through), cgroupfs under
// CgroupRoot, no image garbage collection (imported images cannot be pulled
// again) and no eviction thresholds that a busy CI disk would trip.
func kubeletConfig(clientCA, servingCert, servingKey, socket string, port int) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":        "kubelet.config.k8s.io/v1beta1",
		"kind":              "KubeletConfiguration",
		"address":           Address,
		"port":              port,
		"readOnlyPort":      0,
		"healthzPort":       0,
		"tlsCertFile":       servingCert,
		"tlsPrivateKeyFile": servingKey,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": clientCA},
		},
		"authorization":            map[string]any{"mode": "Webhook"},
		"containerRuntimeEndpoint": "unix://" + socket,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               CgroupRoot,
		// The machine runs cgroup v1 (hybrid); the kubelet refuses it
		// unless told.
		"failCgroupV1":                false,
		"failSwapOn":                  false,
		"podCIDR":                     Subnet,
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available":  "1Mi",
			"nodefs.available":  "1%",
			"imagefs.available": "1%",
		},
		"serializeImagePulls":       false,
		"syncFrequency":             "10s",
		"nodeStatusUpdateFrequency": "5s",
		"rotateCertificates":        false,
		"serverTLSBootstrap":        false,
		"staticPodPath":             "",
		"resolvConf":                "/etc/resolv.conf",
		"maxPods":                   110,
	}
	return yaml.Marshal(cfg)
}

// KubeletRoot is the kubelet's --root-dir: its Pods' volumes are under
// <KubeletRoot>/pods.
func (n *Node) KubeletRoot() string { return filepath.Join(n.Dir, "kubelet") }

// startKubelet starts the kubelet as system:node:<Name>, registering the node
// with Options.Labels.
func (n *Node) startKubelet(ca *ca, labels map[string]string) error {
	dir := n.KubeletRoot()
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := ca.writeKubeconfig(kubeconfig, n.cluster.RESTConfig.Host, pkix.Name{CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}}); err != nil {
		return err
	}
	servingCert, servingKey, err := ca.writeServing(filepath.Join(dir, "pki"), net.ParseIP(Address))
	if err != nil {
		return err
	}
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		return err
	}
	caFile, _ := n.cluster.CA()
	cfg, err := kubeletConfig(caFile, servingCert, servingKey, socketPath(n.Dir), ports[0])
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	var lbls []string
	for k, v := range labels {
		lbls = append(lbls, k+"="+v)
	}
	sort.Strings(lbls)
	args := []string{
		"--config=" + cfgPath,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + dir,
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + Address,
		"--v=2",
	}
	if len(lbls) > 0 {
		args = append(args, "--node-labels="+strings.Join(lbls, ","))
	}
	_, err = n.start("kubelet", n.bins.Kubelet, args...)
	return err
}

// proxyConfig is kube-proxy's configuration: nftables mode (one table of its
// own, kube-proxy), NodePorts only on the node's address, conntrack and
// oom_score_adj left as the machine has them.
func proxyConfig(kubeconfig, name string, ports []int) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "nftables",
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"hostnameOverride":   name,
		"clusterCIDR":        Subnet,
		"detectLocalMode":    "ClusterCIDR",
		"nodePortAddresses":  []string{Address + "/32"},
		"healthzBindAddress": fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"metricsBindAddress": fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"oomScoreAdj":        0,
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	}
	return yaml.Marshal(cfg)
}

// startProxy starts kube-proxy as system:kube-proxy, whom the API server's
// bootstrap RBAC (system:node-proxier) lets read Services and EndpointSlices.
func (n *Node) startProxy(ctx context.Context, ca *ca) error {
	kubeconfig := filepath.Join(n.Dir, "kube-proxy.kubeconfig")
	if err := ca.writeKubeconfig(kubeconfig, n.cluster.RESTConfig.Host, pkix.Name{CommonName: "system:kube-proxy"}); err != nil {
		return err
	}
	ports, err := testcluster.FreePorts(2)
	if err != nil {
		return err
	}
	cfg, err := proxyConfig(kubeconfig, n.Name, ports)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	d, err := n.start("kube-proxy", n.bins.KubeProxy, "--config="+cfgPath, "--v=2")
	if err != nil {
		return err
	}
	// Its table appears with its first sync.
	return testcluster.WaitFor(ctx, "kube-proxy's nftables table", []*testcluster.Process{d}, func(context.Context) (bool, error) {
		_, err := run("nft", "list", "table", "ip", proxyTable)
		return err == nil, err
	})
}
