package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypeapi "kubevirt.io/api/instancetype"
)

// keyInput is what Key hashes.
type keyInput struct {
	Placement    Placement `json:"placement"`
	Instancetype string    `json:"instancetype,omitempty"`
	Preference   string    `json:"preference,omitempty"`
}

// Key is a short hash of what places vm and can be read from vm alone: its
// placement without instancetype or preference (Of with no Sources), and
// which instancetype and preference it refers to. It changes when the
// template's placement changes or the VM refers to another instancetype or
// preference; a change made inside an instancetype or preference does not
// change it (`kubectl vmctl diff` reads those and sees that too). It is
// "" for a VM without a template.
func Key(vm *kubevirtv1.VirtualMachine) string {
	if vm == nil || vm.Spec.Template == nil {
		return ""
	}
	in := keyInput{Placement: Of(vm, Sources{})}
	if m := vm.Spec.Instancetype; m != nil {
		in.Instancetype = instancetypeRef(m.Kind, m.Name, m.InferFromVolume)
	}
	if m := vm.Spec.Preference; m != nil {
		in.Preference = preferenceRef(m.Kind, m.Name, m.InferFromVolume)
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Maps of strings and API structs always encode.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// instancetypeRef names an instancetype as kind/name, the kind as KubeVirt
// reads it (pkg/instancetype/find): namespaced, or else cluster-wide.
func instancetypeRef(kind, name, inferFrom string) string {
	switch strings.ToLower(kind) {
	case instancetypeapi.SingularResourceName, instancetypeapi.PluralResourceName:
		kind = instancetypeapi.SingularResourceName
	default:
		kind = instancetypeapi.ClusterSingularResourceName
	}
	return kind + "/" + name + inferred(inferFrom)
}

// preferenceRef names a preference as instancetypeRef names an
// instancetype.
func preferenceRef(kind, name, inferFrom string) string {
	switch strings.ToLower(kind) {
	case instancetypeapi.SingularPreferenceResourceName, instancetypeapi.PluralPreferenceResourceName:
		kind = instancetypeapi.SingularPreferenceResourceName
	default:
		kind = instancetypeapi.ClusterSingularPreferenceResourceName
	}
	return kind + "/" + name + inferred(inferFrom)
}

func inferred(volume string) string {
	if volume == "" {
		return ""
	}
	return " inferred from volume " + volume
}

// KeepInputs returns a copy of vm that keeps, of its spec, only what Of and
// Key read (with its metadata and status, shared with vm): what a
// prototype kept in memory by `status` needs.
func KeepInputs(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	out := &kubevirtv1.VirtualMachine{TypeMeta: vm.TypeMeta, ObjectMeta: vm.ObjectMeta, Status: vm.Status}
	out.Spec.RunStrategy = vm.Spec.RunStrategy
	out.Spec.Instancetype = vm.Spec.Instancetype.DeepCopy()
	out.Spec.Preference = vm.Spec.Preference.DeepCopy()
	if t := vm.Spec.Template; t != nil {
		s := &t.Spec
		kept := kubevirtv1.VirtualMachineInstanceSpec{
			NodeSelector:              s.NodeSelector,
			Affinity:                  s.Affinity,
			Tolerations:               s.Tolerations,
			TopologySpreadConstraints: s.TopologySpreadConstraints,
			PriorityClassName:         s.PriorityClassName,
			SchedulerName:             s.SchedulerName,
			Architecture:              s.Architecture,
		}
		kept.Domain.CPU = s.Domain.CPU
		kept.Domain.Machine = s.Domain.Machine
		out.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: *kept.DeepCopy()}
	}
	return out
}
