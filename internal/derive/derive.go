package derive

import (
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Pod identifies the agent Pod a derived VM belongs to.
type Pod struct {
	Name      string
	Namespace string
	UID       types.UID
	Node      string
}

// Options change how a VM is derived.
type Options struct {
	// Namespace is where the derived VM is made; empty means the Pod's.
	Namespace string
	// AllowSharedVolumes permits writable persistentVolumeClaim volumes,
	// which every derived VM would then share.
	AllowSharedVolumes bool
}

// Name returns the derived VM's name for a prototype and a Pod:
// "<prototype>-<pod>", cut to a DNS label with a stable hash suffix when longer.
func Name(prototype, pod string) string {
	panic("TODO(derive helper)")
}

// VM derives the VirtualMachine that pod runs from proto. It never modifies proto.
func VM(proto *kubevirtv1.VirtualMachine, pod Pod, opts Options) (*kubevirtv1.VirtualMachine, error) {
	panic("TODO(derive helper)")
}
