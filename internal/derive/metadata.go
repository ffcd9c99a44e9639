package derive

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// objectMeta builds the derived VM's metadata from scratch, so nothing that
// belongs to the prototype object (uid, resourceVersion, generation,
// timestamps, managedFields, finalizers, ownerReferences, generateName)
// can leak into it. Only labels and annotations are carried over.
func objectMeta(proto *kubevirtv1.VirtualMachine, pod Pod, name, namespace string) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Name:        name,
		Namespace:   namespace,
		Labels:      maps.Clone(proto.Labels),
		Annotations: CarriedAnnotations(proto.Annotations),
	}

	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	maps.Copy(meta.Labels, derivedLabels(proto.Name, pod.Name))

	meta.Annotations[contract.AnnotationPodName] = pod.Name
	meta.Annotations[contract.AnnotationPodNamespace] = pod.Namespace
	meta.Annotations[contract.AnnotationPodUID] = string(pod.UID)
	meta.Annotations[contract.AnnotationNode] = pod.Node
	meta.Annotations[contract.AnnotationPrototypeName] = proto.Name
	meta.Annotations[contract.AnnotationPrototypeNamespace] = proto.Namespace
	meta.Annotations[contract.AnnotationPrototypeGeneration] = strconv.FormatInt(proto.Generation, 10)
	if proto.UID != "" {
		meta.Annotations[contract.AnnotationPrototypeUID] = string(proto.UID)
	}

	// An ownerReference across namespaces is invalid: the garbage collector
	// would treat the owner as absent and delete the VM at once.
	if namespace == pod.Namespace {
		meta.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         "v1",
			Kind:               "Pod",
			Name:               pod.Name,
			UID:                pod.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(false),
		}}
	}
	return meta
}

// derivedLabels are the labels every derived VM and its VMI template carry.
func derivedLabels(prototype, pod string) map[string]string {
	return map[string]string{
		contract.LabelPrototype: LabelValue(prototype),
		contract.LabelPod:       pod,
	}
}

// CarriedAnnotations are the annotations of a prototype that its derived
// VMs carry: all but DroppedAnnotations. Never nil.
func CarriedAnnotations(annotations map[string]string) map[string]string {
	out := make(map[string]string, len(annotations)+8)
	for k, v := range annotations {
		if !bookkeepingAnnotation(k) {
			out[k] = v
		}
	}
	return out
}

// DroppedAnnotations are the prototype's annotations a derived VM does not
// carry: they record state of the prototype object itself (kubectl apply's
// last state, KubeVirt's observed API versions), which would be wrong on a
// different object.
func DroppedAnnotations() []string {
	return []string{
		corev1.LastAppliedConfigAnnotation,
		kubevirtv1.ControllerAPILatestVersionObservedAnnotation,
		kubevirtv1.ControllerAPIStorageVersionObservedAnnotation,
	}
}

func bookkeepingAnnotation(key string) bool { return slices.Contains(DroppedAnnotations(), key) }

// templateMeta labels the VMI template so the running VMI can be traced to
// its Pod too, and drops identity fields KubeVirt fills in from the VM.
func templateMeta(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec, prototype, pod string) {
	if tmpl.ObjectMeta.Labels == nil {
		tmpl.ObjectMeta.Labels = map[string]string{}
	}
	maps.Copy(tmpl.ObjectMeta.Labels, derivedLabels(prototype, pod))
	tmpl.ObjectMeta.Name = ""
	tmpl.ObjectMeta.Namespace = ""
	tmpl.ObjectMeta.GenerateName = ""
}
