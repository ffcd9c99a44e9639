package contract

// Labels and annotations that mark a VirtualMachine as derived by vmctl. The
// agent, status, diff and gc all find derived VMs by these and nothing else.
const (
	// LabelPrototype holds the prototype VM's name (hashed to fit a label value).
	LabelPrototype = "vmctl.kubevirt.io/prototype"
	// LabelPod holds the owning Pod's name, which always fits a label value:
	// an agent of a longer name makes no VM.
	LabelPod = "vmctl.kubevirt.io/pod"
	// LabelSubdomain, on VMs derived with a subdomain (a StatefulSet's),
	// holds that subdomain: the headless Service of that name selects the
	// VMs by it.
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
	// AnnotationLauncherPriorityClass names, on a VM derived with a launcher
	// priority class, that class: diff derives the VM again with it. On an
	// agent Pod's template it names the class the agent gives its VM
	// (EnvLauncherPriorityClass).
	AnnotationLauncherPriorityClass = "vmctl.kubevirt.io/launcher-priority-class"
)
