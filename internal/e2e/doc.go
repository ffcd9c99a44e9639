// Package e2e holds the end-to-end tests of kubectl-vmctl. They run the built
// binary (VMCTL_BINARY, `make e2e` sets it) against a real control plane on
// loopback (package testcluster): kube-apiserver, etcd, controller manager,
// scheduler and kwok, with KubeVirt's real virt-api and virt-controller
// (package kubevirt), and stand-ins for virt-handler and for the kubelet of
// agent Pods on kwok's many nodes (package doubles). The agent image on a
// real kubelet is tested in internal/e2e/realnode. They need the build tag
// `e2e`.
//
// The shared cluster runs the newest KubeVirt the harness builds;
// VMCTL_KUBEVIRT=v1.7.0 runs every test on that release instead. The tests
// that hold vmctl to KubeVirt's own rules run on every release (eachKubeVirt).
package e2e
