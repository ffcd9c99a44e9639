// Package node runs a real Kubernetes node beside a testcluster's control
// plane: kubelet and kube-proxy built from the control plane's own Kubernetes
// module (package testcluster's tools), containerd v2 built from this
// package's tools module (internal/testcluster/node/tools), runc and the CNI
// plugins from the OS (hack/node-deps.sh installs them). It registers next to
// kwok's nodes, which kwok manages; kwok leaves this one alone, as it carries
// no kwok annotation.
//
// What it sets up, and Stop removes again (also after a failed start, and on
// SIGINT or SIGTERM through StopOnSignal):
//   - containerd with its own config, root, state and sockets under the node's
//     directory, its pause image built here like the agent image (no
//     registry), images imported from tarballs (ImportImage): among them
//     the stand-ins for KubeVirt's launcher and containerDisk images that
//     EnsureBinaries builds (LauncherImage, program virtlauncher), with which
//     the node runs the launcher Pods of KubeVirt's real virt-controller;
//   - a bridge (Bridge) with the node's address (Address) and a bridge +
//     host-local CNI config of its own, not the machine's CNI folder;
//   - kube-proxy in nftables mode (its own nftables table), so Pods reach
//     Services, the API server's kubernetes Service among them: the scaffolded
//     manifests run unchanged;
//   - a route that makes the Service range unreachable from the machine, so no
//     Service address ever leaves it;
//   - the kubelet, under its own cgroup root (CgroupRoot), not /kubepods, with
//     client and serving certificates from the cluster's CA, serving on
//     Address: the API server reaches it for `kubectl logs` and `exec`;
//   - the node's directory bind-mounted on itself as a shared mount, for
//     Bidirectional volumes;
//   - on first use of DialFromClient, a network namespace bound under the
//     node's directory, routed to the node by a veth pair (vmctl-client),
//     forwarding on that pair and the bridge only, and an nftables table
//     (vmctl-client) that drops the bridge's other forwarding.
//
// With Options.OwnPIDNamespace, containerd runs as PID 1 of a PID namespace
// of its own, for hostPID Pods that reach the node through /proc/1.
//
// The kubelet also creates its iptables chains (KUBE-FIREWALL, canaries) and
// sets kernel sysctls at start (vm.overcommit_memory=1, vm.panic_on_oom=0,
// kernel.panic=10, kernel.panic_on_oops=1, kernel.keys.root_maxkeys and
// root_maxbytes); Stop deletes the chains and puts the sysctls back.
//
// Names and addresses are fixed, so only one real node runs on a machine at a
// time: Start waits for a machine-wide lock. A node whose process was killed
// (SIGKILL) is swept by the next Start, from the state it left in StateFile.
// It needs root, Linux, and cgroup v1 or v2.
package node
