// Package doubles holds the test doubles that stand in for the parts of a
// cluster that the loopback control plane (package testcluster) does not run
// for real. Each one says in its doc comment which real component it plays
// and what it leaves out:
//
//   - Kubelet plays the kubelet for vmctl agent Pods on kwok's simulated
//     nodes: it runs the real kubectl-vmctl binary as a process with a token
//     bound to the Pod. It stays for what one real node cannot do: many
//     nodes (a DaemonSet on four, Deployments at scale). The image, the
//     securityContext, probes, logs, exec, restarts and deletion are tested
//     on a real kubelet (package node, internal/e2e/realnode).
//   - RunVirtHandler stands in for KubeVirt's virt-handler: it moves a VMI
//     whose launcher Pod runs to Running, and a deleted one to Succeeded.
//     KubeVirt's real virt-api and virt-controller (package kubevirt) do
//     the rest.
//
// On the real node, the programs of KubeVirt's launcher image have a
// stand-in too, built into an image with the node's runtime: see package
// node's LauncherImage and its program virtlauncher.
//
// Nothing in the product imports this package.
package doubles
