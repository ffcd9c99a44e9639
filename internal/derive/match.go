package derive

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// DerivedSelector is a label selector matching every VM vmctl made. Confirm
// each match with IsDerived or IsAgentVM: labels alone are easy to copy.
const DerivedSelector = contract.LabelPrototype + "," + contract.LabelPod

// Selector is the label selector of the VMs derived from the prototype
// named prototype, or of every derived VM when prototype is empty. Confirm
// each match with IsAgentVM.
func Selector(prototype string) string {
	if prototype == "" {
		return DerivedSelector
	}
	return PrototypeSelector(prototype) + "," + contract.LabelPod
}

// PrototypeSelector returns a label selector matching the VMs derived from
// the prototype named prototype, in any namespace the prototype's VMs live
// in. Confirm each match with IsDerivedFrom: the label holds only the name.
func PrototypeSelector(prototype string) string {
	return labels.Set{contract.LabelPrototype: LabelValue(prototype)}.String()
}

// PodSelector returns a label selector matching the VMs derived for Pods
// named pod. Confirm each match with the Pod's UID (OriginOf): the label
// holds only the name, and a Pod of the same name may have come before.
func PodSelector(pod string) string {
	return labels.Set{contract.LabelPod: pod}.String()
}

// IsDerived reports whether meta carries vmctl's marks: both vmctl labels
// and the owning Pod's UID. Never change or delete a VM for which it is
// false. It is the loose test: a copy of a derived VM keeps the marks, so
// it says "not a prototype" (completion, an agent refusing a VM it finds)
// rather than "an agent's VM": that is IsAgentVM.
func IsDerived(meta metav1.Object) bool {
	if meta == nil {
		return false
	}
	l, a := meta.GetLabels(), meta.GetAnnotations()
	return l[contract.LabelPrototype] != "" && l[contract.LabelPod] != "" && a[contract.AnnotationPodUID] != ""
}

// IsAgentVM reports whether meta is the VM an agent derived for the Pod it
// records. It is the strict test, which status, diff and gc count derived
// VMs by. The rule:
//
//   - IsDerived's marks, and the Pod's name and namespace and the
//     prototype's name recorded: without the Pod no one can tell whether
//     it is gone.
//   - A controller ownerReference to the recorded Pod (its name and UID),
//     as an agent sets in its Pod's namespace, makes it the Pod's VM
//     whatever its name, so that a VM named by an older rule still counts.
//     A copy that kept the reference counts too: Kubernetes' garbage
//     collector deletes it with the Pod all the same.
//   - Without one (a VM in another namespace than its Pod, where a
//     reference is invalid, or one whose reference the garbage collector
//     removed as its Pod was deleted with propagationPolicy Orphan), only
//     the name tells the agent's VM from a copy renamed, say, to serve as
//     a prototype: it must be the name Name gives. So status does not call
//     such a copy an orphan, diff does not compare it and gc never deletes
//     it.
//   - A controller other than the recorded Pod makes it no agent's VM.
func IsAgentVM(meta metav1.Object) bool {
	if !IsDerived(meta) {
		return false
	}
	o := OriginOf(meta)
	if o.PodName == "" || o.PodNamespace == "" || o.PrototypeName == "" {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(meta)
	if owner == nil {
		return meta.GetName() == Name(o.PrototypeName, o.PodName, o.PodUID)
	}
	return meta.GetNamespace() == o.PodNamespace && owner.APIVersion == "v1" && owner.Kind == "Pod" &&
		owner.Name == o.PodName && owner.UID == o.PodUID
}

// IsOrphanedInstance reports whether meta, a VirtualMachineInstance,
// carries vmctl's labels (derive puts them on its VM's template), is not
// being deleted, and has no controller: the garbage collector removes a
// VM's reference from its instance when the VM is deleted with
// propagationPolicy Orphan, and the guest runs on. That no VM of its name
// exists is the caller's to check: such a VM adopts it.
func IsOrphanedInstance(meta metav1.Object) bool {
	l := meta.GetLabels()
	return l[contract.LabelPrototype] != "" && l[contract.LabelPod] != "" && meta.GetDeletionTimestamp() == nil &&
		metav1.GetControllerOfNoCopy(meta) == nil
}

// IsDerivedFrom reports whether meta belongs to a VM vmctl derived from the
// prototype namespace/name.
func IsDerivedFrom(meta metav1.Object, namespace, name string) bool {
	if !IsDerived(meta) {
		return false
	}
	a := meta.GetAnnotations()
	return a[contract.AnnotationPrototypeName] == name && a[contract.AnnotationPrototypeNamespace] == namespace
}

// markerLabels and markerAnnotations are what vmctl writes on every derived
// VM, and what a prototype must not carry.
var (
	markerLabels      = []string{contract.LabelPrototype, contract.LabelPod, contract.LabelSubdomain}
	markerAnnotations = []string{
		contract.AnnotationPodName, contract.AnnotationPodNamespace, contract.AnnotationPodUID, contract.AnnotationNode,
		contract.AnnotationPrototypeName, contract.AnnotationPrototypeNamespace, contract.AnnotationPrototypeGeneration, contract.AnnotationPrototypeUID,
		contract.AnnotationLauncherPriorityClass, contract.AnnotationVMRevision,
	}
)

// MarkersError refuses a prototype that carries vmctl's derived-VM labels
// or annotations, as a prototype made by copying a derived VM does: gc
// would take it for a derived VM and delete it once the Pod it names is
// gone, and status and diff would count it among the derived VMs. The
// agent refuses to derive from it, and scaffold to pin a revision of it.
type MarkersError struct{ msg string }

// Error names the markers and ends with the commands that remove exactly
// those found: kubectl label and annotate fail on a key the VM does not
// have.
func (e *MarkersError) Error() string { return e.msg }

// Markers returns a *MarkersError when proto carries vmctl's markers:
// every agent refuses such a prototype, and scaffold and rollout restart
// pin none.
func Markers(proto metav1.Object) error {
	labels := present(proto.GetLabels(), markerLabels)
	annotations := present(proto.GetAnnotations(), markerAnnotations)
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	var found, fix []string
	for _, k := range labels {
		found = append(found, "label "+k)
	}
	for _, k := range annotations {
		found = append(found, "annotation "+k)
	}
	if len(labels) > 0 {
		fix = append(fix, removeKeys("label", proto, labels))
	}
	if len(annotations) > 0 {
		fix = append(fix, removeKeys("annotate", proto, annotations))
	}
	ref := proto.GetNamespace() + "/" + proto.GetName()
	return &MarkersError{msg: fmt.Sprintf("prototype %s carries vmctl's derived-VM markers (%s), as a copy of a derived VM does; "+
		"remove them so that gc and status do not take it for a derived VM: %s",
		ref, strings.Join(found, ", "), strings.Join(fix, " && "))}
}

// present returns the keys of want that m holds, in want's order.
func present(m map[string]string, want []string) []string {
	var out []string
	for _, k := range want {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// removeKeys is the kubectl label or annotate command that removes keys
// from the VM meta.
func removeKeys(verb string, meta metav1.Object, keys []string) string {
	return fmt.Sprintf("kubectl %s vm %s -n %s %s-", verb, meta.GetName(), meta.GetNamespace(), strings.Join(keys, "- "))
}
