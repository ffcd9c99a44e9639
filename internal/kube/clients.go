// Package kube is how vmctl talks to the API server: the clientsets, built
// once from kubectl's flags, and the paged lists and narrowed watches the
// commands and the agent read through.
package kube

import (
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"
)

// Clients are the typed clientsets vmctl reads and writes through.
type Clients struct {
	Kube     kubernetes.Interface
	KubeVirt kubevirt.Interface
}
