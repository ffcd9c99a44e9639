package placement

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// Sources are the instancetype and preference specs a VM refers to, when
// they were read; nil when it refers to none, or they are not known.
type Sources struct {
	Instancetype *instancetypev1beta1.VirtualMachineInstancetypeSpec
	Preference   *instancetypev1beta1.VirtualMachinePreferenceSpec
}

// Of is the placement KubeVirt v1.7's virt-controller gives the launcher Pod
// of a VMI made from vm's template with src's instancetype and preference
// applied (pkg/virt-controller/services/template.go and
// nodeselectorrenderer.go, pkg/instancetype/apply):
//
//   - nodeSelector: kubevirt.io/schedulable=true; kubernetes.io/arch of the
//     template's architecture, else the preference's preferredArchitecture;
//     the template's nodeSelector, else the instancetype's; and a label
//     for the machine type (else the preference's preferredMachineType),
//     for a named CPU model (the template's, else the instancetype's) and
//     for each CPU feature the VM requires (the template's, then the
//     preference's preferredCPUFeatures it does not name);
//   - affinity: the template's node affinity, pod affinity and pod
//     anti-affinity, with a requirement ANDed into every required node
//     term that the node lacks the label of an obsolete host CPU model (a
//     VM of the host model, KubeVirt's default) and each CPU feature the
//     VM forbids;
//   - tolerations, topologySpreadConstraints and priorityClassName: the
//     template's; schedulerName: the template's, else the instancetype's.
//
// Not rendered, as they depend on KubeVirt's configuration or differ
// between its releases: the cluster-wide nodeSelectors and default CPU
// model of the KubeVirt CR, the label a VM with dedicated CPUs needs (its
// name changed after v1.7), Hyper-V's strict check, real-time, SEV, TDX and
// Secure Execution labels, and the TSC frequency label of a VMI already
// running. A VM with no template has no placement.
func Of(vm *kubevirtv1.VirtualMachine, src Sources) Placement {
	if vm == nil || vm.Spec.Template == nil {
		return Placement{}
	}
	spec := &vm.Spec.Template.Spec
	it, pref := src.Instancetype, src.Preference
	p := Placement{
		NodeSelector:              nodeSelector(spec, it, pref),
		Affinity:                  affinity(spec, it),
		Tolerations:               cloneAll(spec.Tolerations),
		TopologySpreadConstraints: cloneAll(spec.TopologySpreadConstraints),
		PriorityClassName:         spec.PriorityClassName,
		SchedulerName:             spec.SchedulerName,
	}
	if p.SchedulerName == "" && it != nil {
		p.SchedulerName = it.SchedulerName
	}
	return p.normalize()
}

// nodeSelector renders the launcher Pod's nodeSelector, as
// NewNodeSelectorRenderer and Render do: KubeVirt's own labels first, the
// VMI's nodeSelector over them, then the labels of what the VMI asks for.
func nodeSelector(spec *kubevirtv1.VirtualMachineInstanceSpec, it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) map[string]string {
	out := map[string]string{kubevirtv1.NodeSchedulable: "true"}
	arch := spec.Architecture
	if arch == "" && pref != nil && pref.PreferredArchitecture != nil {
		arch = *pref.PreferredArchitecture
	}
	if arch != "" {
		out[corev1.LabelArchStable] = strings.ToLower(arch)
	}
	vmiSelector := spec.NodeSelector
	if vmiSelector == nil && it != nil {
		vmiSelector = it.NodeSelector // KubeVirt refuses a VM that sets both
	}
	maps.Copy(out, vmiSelector)

	if m := cpuModel(spec, it); m != "" && m != kubevirtv1.CPUModeHostModel && m != kubevirtv1.CPUModeHostPassthrough {
		out[kubevirtv1.CPUModelLabel+m] = "true"
	}
	for _, f := range cpuFeatures(spec, pref) {
		if f.Policy == "" || f.Policy == "require" {
			out[kubevirtv1.CPUFeatureLabel+f.Name] = "true"
		}
	}
	if m := machineType(spec, pref); m != "" {
		out[kubevirtv1.SupportedMachineTypeLabel+m] = "true"
	}
	return out
}

// affinity renders the launcher Pod's affinity, as template.go's
// setNodeAffinityForPod does.
func affinity(spec *kubevirtv1.VirtualMachineInstanceSpec, it *instancetypev1beta1.VirtualMachineInstancetypeSpec) *corev1.Affinity {
	a := spec.Affinity.DeepCopy()
	if m := cpuModel(spec, it); m == "" || m == kubevirtv1.CPUModeHostModel {
		// An empty model is defaulted to host-model, unless the KubeVirt CR
		// names another default.
		a = rejectLabel(a, kubevirtv1.NodeHostModelIsObsoleteLabel)
	}
	if spec.Domain.CPU != nil {
		for _, f := range spec.Domain.CPU.Features {
			if f.Policy == "forbid" {
				a = rejectLabel(a, kubevirtv1.CPUFeatureLabel+f.Name)
			}
		}
	}
	return a
}

// rejectLabel requires that a node lack label, in every required node
// selector term of a (they are ORed), or in a new one: KubeVirt's
// modifyNodeAffintyToRejectLabel.
func rejectLabel(a *corev1.Affinity, label string) *corev1.Affinity {
	req := corev1.NodeSelectorRequirement{Key: label, Operator: corev1.NodeSelectorOpDoesNotExist}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	required := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}},
		}
		return a
	}
	for i := range required.NodeSelectorTerms {
		t := &required.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, req)
	}
	return a
}

// cpuModel is the VMI's CPU model: the template's, else the instancetype's.
func cpuModel(spec *kubevirtv1.VirtualMachineInstanceSpec, it *instancetypev1beta1.VirtualMachineInstancetypeSpec) string {
	if spec.Domain.CPU != nil && spec.Domain.CPU.Model != "" {
		return spec.Domain.CPU.Model
	}
	if it != nil && it.CPU.Model != nil {
		return *it.CPU.Model
	}
	return ""
}

// cpuFeatures are the template's CPU features, then the preference's
// preferred features the template does not name.
func cpuFeatures(spec *kubevirtv1.VirtualMachineInstanceSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) []kubevirtv1.CPUFeature {
	var out []kubevirtv1.CPUFeature
	named := map[string]bool{}
	if spec.Domain.CPU != nil {
		for _, f := range spec.Domain.CPU.Features {
			out = append(out, f)
			named[f.Name] = true
		}
	}
	if pref != nil && pref.CPU != nil {
		for _, f := range pref.CPU.PreferredCPUFeatures {
			if !named[f.Name] {
				out = append(out, f)
			}
		}
	}
	return out
}

// machineType is the template's machine type (KubeVirt's mutating webhook
// fills it in on a VM's create), else the preference's.
func machineType(spec *kubevirtv1.VirtualMachineInstanceSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) string {
	if m := spec.Domain.Machine; m != nil && m.Type != "" {
		return m.Type
	}
	if pref != nil && pref.Machine != nil {
		return pref.Machine.PreferredMachineType
	}
	return ""
}
