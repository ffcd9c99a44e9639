// Package guestmetrics serves the guests' own CPU as custom metrics of
// their agent Pods (custom.metrics.k8s.io), so that a
// HorizontalPodAutoscaler on an agent workload scales on what its VMs do,
// not on what its agents do. The guest runs in its VM's virt-launcher Pod,
// which metrics-server measures like any Pod (metrics.k8s.io); KubeVirt
// labels that Pod with the VMI's labels, vmctl.kubevirt.io/pod among them,
// which names the agent Pod it stands for.
//
// The server is sigs.k8s.io/custom-metrics-apiserver's; this package is
// its provider (Provider) and the pure rules that turn samples into values
// (values.go).
package guestmetrics
