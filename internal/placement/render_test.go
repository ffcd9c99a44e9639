package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// stored is a VM as the API server keeps it after KubeVirt's mutating
// webhook: with an architecture and a machine type.
func stored(edit func(*kubevirtv1.VirtualMachineInstanceSpec)) *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Architecture: "amd64",
			Domain: kubevirtv1.DomainSpec{
				CPU:     &kubevirtv1.CPU{Cores: 1},
				Machine: &kubevirtv1.Machine{Type: "q35"},
			},
		},
	}}}
	if edit != nil {
		edit(&vm.Spec.Template.Spec)
	}
	return vm
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

var (
	notObsolete = expr(kubevirtv1.NodeHostModelIsObsoleteLabel, corev1.NodeSelectorOpDoesNotExist)
	gpuPool     = expr("pool", corev1.NodeSelectorOpIn, "gpu")
	ssd         = expr("disk", corev1.NodeSelectorOpIn, "ssd")
)

func required(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

// base is the nodeSelector every stored VM's launcher Pod gets, with more.
func base(more ...string) map[string]string {
	out := map[string]string{
		"kubevirt.io/schedulable":           "true",
		"kubernetes.io/arch":                "amd64",
		"machine-type.node.kubevirt.io/q35": "true",
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

func TestOf(t *testing.T) {
	toleration := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vms", Effect: corev1.TaintEffectNoSchedule}
	spread := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}
	anti := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: term(ssd)}}

	for _, tt := range []struct {
		name string
		vm   *kubevirtv1.VirtualMachine
		src  Sources
		want Placement
	}{{
		name: "a VM with nothing of its own: KubeVirt's labels, and no obsolete host model",
		vm:   stored(nil),
		want: Placement{NodeSelector: base(), Affinity: required(term(notObsolete))},
	}, {
		name: "no template, no placement",
		vm:   &kubevirtv1.VirtualMachine{},
	}, {
		name: "the template's own: nodeSelector over KubeVirt's, tolerations, spread, priority, scheduler",
		vm: stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.NodeSelector = map[string]string{"pool": "gpu", "kubevirt.io/schedulable": "yes"}
			s.Tolerations = []corev1.Toleration{toleration}
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread}
			s.PriorityClassName = "vms"
			s.SchedulerName = "bin-packer"
		}),
		want: Placement{
			NodeSelector:              base("pool", "gpu", "kubevirt.io/schedulable", "yes"),
			Affinity:                  required(term(notObsolete)),
			Tolerations:               []corev1.Toleration{toleration},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{spread},
			PriorityClassName:         "vms",
			SchedulerName:             "bin-packer",
		},
	}, {
		name: "required terms each get the obsolete-model requirement; preferred terms and pod anti-affinity stay",
		vm: stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(gpuPool), term(ssd)}},
					PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				},
				PodAntiAffinity: anti,
			}
		}),
		want: Placement{NodeSelector: base(), Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(gpuPool, notObsolete), term(ssd, notObsolete)}},
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			},
			PodAntiAffinity: anti,
		}},
	}, {
		name: "only preferred node affinity gets a required term",
		vm: stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}}
		}),
		want: Placement{NodeSelector: base(), Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(notObsolete)}},
			PreferredDuringSchedulingIgnoredDuringExecution: preferred,
		}}},
	}, {
		name: "a named CPU model needs its label; required features theirs; forbidden ones must be absent",
		vm: stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Model = "Skylake-Client-IBRS"
			s.Domain.CPU.Features = []kubevirtv1.CPUFeature{{Name: "vmx"}, {Name: "pcid", Policy: "require"}, {Name: "ssbd", Policy: "optional"}, {Name: "mpx", Policy: "forbid"}}
		}),
		want: Placement{
			NodeSelector: base("cpu-model.node.kubevirt.io/Skylake-Client-IBRS", "true",
				"cpu-feature.node.kubevirt.io/vmx", "true", "cpu-feature.node.kubevirt.io/pcid", "true"),
			Affinity: required(term(expr("cpu-feature.node.kubevirt.io/mpx", corev1.NodeSelectorOpDoesNotExist))),
		},
	}, {
		name: "host-passthrough needs no model label and no obsolete check",
		vm:   stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Model = kubevirtv1.CPUModeHostPassthrough }),
		want: Placement{NodeSelector: base()},
	}, {
		name: "host-model as named",
		vm:   stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Model = kubevirtv1.CPUModeHostModel }),
		want: Placement{NodeSelector: base(), Affinity: required(term(notObsolete))},
	}, {
		name: "the instancetype's nodeSelector, scheduler and CPU model",
		vm:   stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.CPU = nil }),
		src: Sources{Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{
			NodeSelector:  map[string]string{"pool": "big"},
			SchedulerName: "bin-packer",
			CPU:           instancetypev1beta1.CPUInstancetype{Guest: 4, Model: ptr.To("EPYC")},
		}},
		want: Placement{NodeSelector: base("pool", "big", "cpu-model.node.kubevirt.io/EPYC", "true"), SchedulerName: "bin-packer"},
	}, {
		name: "the template's scheduler wins over the instancetype's",
		vm:   stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.SchedulerName = "mine" }),
		src:  Sources{Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{SchedulerName: "theirs"}},
		want: Placement{NodeSelector: base(), Affinity: required(term(notObsolete)), SchedulerName: "mine"},
	}, {
		name: "the preference's architecture, machine type and CPU features fill what the template lacks",
		vm: stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Architecture = ""
			s.Domain.Machine = nil
			s.Domain.CPU.Features = []kubevirtv1.CPUFeature{{Name: "vmx", Policy: "optional"}}
		}),
		src: Sources{Preference: &instancetypev1beta1.VirtualMachinePreferenceSpec{
			PreferredArchitecture: ptr.To("ARM64"),
			Machine:               &instancetypev1beta1.MachinePreferences{PreferredMachineType: "virt"},
			CPU:                   &instancetypev1beta1.CPUPreferences{PreferredCPUFeatures: []kubevirtv1.CPUFeature{{Name: "vmx"}, {Name: "aes"}}},
		}},
		want: Placement{
			NodeSelector: map[string]string{
				"kubevirt.io/schedulable":            "true",
				"kubernetes.io/arch":                 "arm64",
				"machine-type.node.kubevirt.io/virt": "true",
				"cpu-feature.node.kubevirt.io/aes":   "true",
			},
			Affinity: required(term(notObsolete)),
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.vm.DeepCopy()
			got := Of(tt.vm, tt.src)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.vm); diff != "" {
				t.Errorf("Of changed the VM (-before +after):\n%s", diff)
			}
		})
	}
}
