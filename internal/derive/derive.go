package derive

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
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
	// AllowSharedVolumes permits writable persistentVolumeClaim volumes and
	// existing DataVolumes, which every derived VM would then share.
	AllowSharedVolumes bool
	// Subdomain, when set, gives the VM a StatefulSet Pod's stable DNS name:
	// the VMI's spec.hostname is the Pod's name and spec.subdomain is
	// Subdomain, the headless Service that selects the VMs (by
	// contract.LabelSubdomain, which the VM and its VMI template then carry), so
	// <pod>.<subdomain>.<namespace>.svc names the VM across Pod restarts.
	// Only for Pods with stable names: a Deployment's change with every Pod.
	Subdomain string
	// LauncherPriorityClass, when set, is the VMI's priority class in
	// place of the prototype's: one of the same value whose
	// preemptionPolicy is Never, for agents that hold their VM's room. The
	// agent nominates the VM's launcher Pod to its node, and the scheduler
	// keeps a nomination through a failed attempt only for a Pod that
	// does not preempt: it clears it when preemption finds nothing to
	// preempt. A launcher Pod placed in the room its agent held has no
	// need to preempt anything.
	LauncherPriorityClass string
	// Name, when set, is the VM's name in place of Name(proto.Name,
	// pod.Name): the name an existing VM was given, perhaps by an older
	// rule, for comparing it with its derivation (diff).
	Name string
	// ReplicaClaims are the claims, among those the prototype's
	// persistentVolumeClaim volumes name, that the workload makes per
	// replica (a StatefulSet's volumeClaimTemplates): the VM uses the
	// Pod's own, ReplicaClaimName(claim, pod.Name), which outlives the Pod
	// as the StatefulSet's retention policy says, in the prototype's.
	ReplicaClaims []string
	// VMRevisionHash, when set, is the hash that names proto as a VM revision
	// (package revision): the snapshot the agent Pod's template pins. The
	// VM records it in its contract.AnnotationVMRevision, by which the
	// create policy finds the revision to hold the VM to.
	VMRevisionHash string
}

// VM derives the VirtualMachine that pod runs from proto. It never modifies proto.
//
// The result is named Name(proto.Name, pod.Name, pod.UID) (or opts.Name), carries the vmctl labels
// and annotations, is owned by the Pod when in the Pod's namespace, is
// pinned to pod.Node, runs with runStrategy Always and evictionStrategy
// External, and has the prototype's
// machine identity, dataVolumeTemplate names and per-replica claims
// (opts.ReplicaClaims) replaced by its own:
// Fields lists every field it sets rather than copies. It
// returns a *SharedVolumeError when the prototype's writable storage would
// be shared by every derived VM, unless opts.AllowSharedVolumes.
func VM(proto *kubevirtv1.VirtualMachine, pod Pod, opts Options) (*kubevirtv1.VirtualMachine, error) {
	if err := validate(proto, pod); err != nil {
		return nil, err
	}
	if err := validateSubdomain(pod, opts.Subdomain); err != nil {
		return nil, err
	}
	namespace := opts.Namespace
	if namespace == "" {
		namespace = pod.Namespace
	}
	name := opts.Name
	if name == "" {
		name = Name(proto.Name, pod.Name, pod.UID)
	}

	spec := proto.Spec.DeepCopy()
	missing, have, own := useReplicaClaims(spec, opts.ReplicaClaims, pod.Name)
	if len(missing) > 0 {
		return nil, &ReplicaClaimError{Prototype: proto.Namespace + "/" + proto.Name, Missing: missing, Claims: have}
	}
	if !opts.AllowSharedVolumes {
		if shared := sharedVolumes(spec, own); len(shared) > 0 {
			return nil, &SharedVolumeError{Prototype: proto.Namespace + "/" + proto.Name, Volumes: shared}
		}
	}

	vm := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{
			APIVersion: kubevirtv1.SchemeGroupVersion.String(),
			Kind:       "VirtualMachine",
		},
		ObjectMeta: objectMeta(proto, pod, name, namespace),
		Spec:       *spec,
	}
	if opts.VMRevisionHash != "" {
		vm.Annotations[contract.AnnotationVMRevision] = opts.VMRevisionHash
	}
	if err := renameDataVolumes(&vm.Spec, name, pod.UID); err != nil {
		return nil, fmt.Errorf("prototype %s/%s: %w", proto.Namespace, proto.Name, err)
	}
	clearInstancetypeRevisions(&vm.Spec)
	templateMeta(vm.Spec.Template, proto.Name, pod.Name)
	setIdentity(&vm.Spec.Template.Spec, name, pod.UID)
	stableIdentity(vm, pod.Name, opts.Subdomain)
	launcherPriority(vm, opts.LauncherPriorityClass)
	vm.Spec.Template.Spec.Affinity = pinToNode(vm.Spec.Template.Spec.Affinity, pod.Node)

	// KubeVirt then holds every eviction of the VM's launcher Pod and only
	// marks the VMI (status.evacuationNodeName): a drain takes the VM down
	// with its agent Pod, as the workload's PodDisruptionBudget allows, and
	// never behind its back. LiveMigrate could not work anyway: the VM is
	// pinned to its node.
	vm.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyExternal)

	// KubeVirt rejects a VM that sets both; the agent's Pod decides when the
	// VM exists, so while it does it always runs.
	vm.Spec.Running = nil
	always := kubevirtv1.RunStrategyAlways
	vm.Spec.RunStrategy = &always
	return vm, nil
}

// validate checks what a derivation needs and a caller might have missed.
func validate(proto *kubevirtv1.VirtualMachine, pod Pod) error {
	if proto == nil {
		return errors.New("no prototype VirtualMachine given")
	}
	if proto.Name == "" {
		return errors.New("prototype VirtualMachine has no name")
	}
	if proto.Spec.Template == nil {
		return fmt.Errorf("prototype %s/%s has no spec.template; give it a VMI template", proto.Namespace, proto.Name)
	}
	if err := Markers(proto); err != nil {
		return err
	}
	var missing []string
	if pod.Name == "" {
		missing = append(missing, "name")
	}
	if pod.Namespace == "" {
		missing = append(missing, "namespace")
	}
	if pod.UID == "" {
		missing = append(missing, "uid")
	}
	if pod.Node == "" {
		missing = append(missing, "node")
	}
	if len(missing) > 0 {
		return fmt.Errorf("agent Pod's %s unknown; pass metadata.name, metadata.namespace, metadata.uid and spec.nodeName to the agent through the downward API",
			strings.Join(missing, ", "))
	}
	// contract.LabelPod holds the Pod's name whole, so that the policies
	// check it exactly. A workload's Pods always fit: their names are
	// generated to 63 characters, or are a StatefulSet's hostnames.
	if len(pod.Name) > contract.MaxNameLength {
		return fmt.Errorf("agent Pod name %q is %d characters long, more than a label value's %d: run the agent in a Pod of a Deployment, StatefulSet or DaemonSet, whose Pod names fit",
			pod.Name, len(pod.Name), contract.MaxNameLength)
	}
	return nil
}

// GuestGracePeriod is how long KubeVirt gives vm's guest to shut down when
// its VMI is deleted: the template's terminationGracePeriodSeconds, or
// KubeVirt's default.
func GuestGracePeriod(vm *kubevirtv1.VirtualMachine) time.Duration {
	seconds := kubevirtv1.DefaultGracePeriodSeconds
	if t := vm.Spec.Template; t != nil && t.Spec.TerminationGracePeriodSeconds != nil {
		seconds = *t.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(seconds) * time.Second
}

// ShutdownSlack is how much longer than the guest's grace period deleting a
// VM may take: KubeVirt noticing the deletion, stopping the launcher,
// removing the VMI and then the VM.
const ShutdownSlack = 10 * time.Second
