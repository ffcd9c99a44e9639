// Package derive turns a prototype VirtualMachine into the VM that one agent Pod
// owns. It is pure: no clients, no clock, no randomness.
package derive

// Labels and annotations that mark a VirtualMachine as made by vmctl. The
// agent, status, diff and gc all find derived VMs by these and nothing else.
const (
	// LabelPrototype holds the prototype VM's name (hashed to fit a label value).
	LabelPrototype = "vmctl.kubevirt.io/prototype"
	// LabelPod holds the owning Pod's name (hashed to fit a label value).
	LabelPod = "vmctl.kubevirt.io/pod"
	// LabelSubdomain, on VMs derived with Options.Subdomain (a
	// StatefulSet's), holds that subdomain: the headless Service of that
	// name selects the VMs by it.
	LabelSubdomain = "vmctl.kubevirt.io/subdomain"

	// AnnotationPodName holds the owning Pod's full name.
	AnnotationPodName = "vmctl.kubevirt.io/pod-name"
	// AnnotationPodNamespace holds the owning Pod's namespace.
	AnnotationPodNamespace = "vmctl.kubevirt.io/pod-namespace"
	// AnnotationPodUID holds the owning Pod's UID; an agent adopts a VM only
	// when it matches.
	AnnotationPodUID = "vmctl.kubevirt.io/pod-uid"
	// AnnotationNode holds the node the VM is pinned to.
	AnnotationNode = "vmctl.kubevirt.io/node"
	// AnnotationPrototypeName holds the prototype VM's full name.
	AnnotationPrototypeName = "vmctl.kubevirt.io/prototype-name"
	// AnnotationPrototypeNamespace holds the prototype VM's namespace.
	AnnotationPrototypeNamespace = "vmctl.kubevirt.io/prototype-namespace"
	// AnnotationPrototypeGeneration holds the prototype's metadata.generation
	// at derivation time, so status can flag VMs derived from an older one.
	AnnotationPrototypeGeneration = "vmctl.kubevirt.io/prototype-generation"
	// AnnotationPrototypeUID holds the prototype's UID at derivation time: a
	// prototype deleted and made again starts again at generation 1, so the
	// generation alone does not say which prototype a VM derives from.
	AnnotationPrototypeUID = "vmctl.kubevirt.io/prototype-uid"
)
