//go:build tools

// Package tools records the commands this module builds: the control plane,
// and the kubelet and kube-proxy of the real node (package node), from the
// same Kubernetes module.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
