// Package testcluster runs a real Kubernetes control plane on loopback for the
// end-to-end tests and `make demo`: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet for
// fake nodes. The binaries are built from the tools module
// (internal/testcluster/tools) into <repo>/.cache/testcluster by
// EnsureBinaries; Start runs them; ForTest wires a cluster into a test.
//
// kwok runs every Pod except vmctl agent Pods, whose status and deletion the
// package's kubelet double manages instead.
package testcluster
