package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// guestProto is prototype ns/name whose guest gets seconds to shut down and
// which asks for evictionStrategy s, when set.
func guestProto(ns, name string, seconds int64, s kubevirtv1.EvictionStrategy) kubevirtv1.VirtualMachine {
	p := protoVM(ns, name, 1)
	p.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
	p.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(seconds)
	if s != "" {
		p.Spec.Template.Spec.EvictionStrategy = ptr.To(s)
	}
	return p
}

// deleteTimeout makes an agent Pod wait d for its VM.
func deleteTimeout(d string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--delete-timeout="+d)
	}
}

func TestWarnings(t *testing.T) {
	// 100s for the guest and 10s for KubeVirt fit the default 170s, not 50s.
	slow := guestProto("ns", "web", 100, "")
	migrating := guestProto("ns", "db", 30, kubevirtv1.EvictionStrategyLiveMigrate)
	agent := func(name, proto string, mods ...func(*corev1.Pod)) corev1.Pod {
		return agentPod("ns", name, "uid-"+name, "n1", proto, time.Hour, mods...)
	}
	vm := func(proto, pod string) kubevirtv1.VirtualMachine {
		return derivedVM("ns", proto, 1, "ns", pod, "uid-"+pod, "n1", time.Hour)
	}
	tests := []struct {
		name string
		inv  Inventory
		want []Warning
	}{{
		name: "agents with the default timeout",
		inv:  Inventory{Pods: ptrs(agent("a", "web"), agent("b", "web")), Prototypes: ptrs(slow), VMs: ptrs(vm("web", "a"), vm("web", "b"))},
	}, {
		name: "one agent of two too short, mid-rollout: said once, by its timeout",
		inv: Inventory{Pods: ptrs(agent("a", "web"), agent("b", "web", deleteTimeout("50s")), agent("c", "web", deleteTimeout("1m"))),
			Prototypes: ptrs(slow), VMs: ptrs(vm("web", "a"), vm("web", "b"), vm("web", "c"))},
		want: []Warning{{PrototypeNamespace: "ns", Prototype: "web", Message: derive.GracePeriodTooShort(&slow, 50*time.Second)}},
	}, {
		name: "a short timeout of another prototype's agent",
		inv: Inventory{Pods: ptrs(agent("a", "web"), agent("b", "db", deleteTimeout("50s"))),
			Prototypes: ptrs(slow, migrating), VMs: ptrs(vm("web", "a"), vm("db", "b"))},
		want: []Warning{{PrototypeNamespace: "ns", Prototype: "db", Message: derive.EvictionStrategyOverridden(&migrating)}},
	}, {
		name: "both warnings of one prototype, sorted by prototype",
		inv: Inventory{Pods: ptrs(agent("a", "web", deleteTimeout("50s")), agent("b", "db", deleteTimeout("5s"))),
			Prototypes: ptrs(slow, migrating), VMs: ptrs(vm("web", "a"), vm("db", "b"))},
		want: []Warning{
			{PrototypeNamespace: "ns", Prototype: "db", Message: derive.GracePeriodTooShort(&migrating, 5*time.Second)},
			{PrototypeNamespace: "ns", Prototype: "db", Message: derive.EvictionStrategyOverridden(&migrating)},
			{PrototypeNamespace: "ns", Prototype: "web", Message: derive.GracePeriodTooShort(&slow, 50*time.Second)},
		},
	}, {
		name: "only orphaned VMs: no agent to be too short",
		inv:  Inventory{Prototypes: ptrs(slow, migrating), VMs: ptrs(vm("web", "gone"), vm("db", "gone"))},
		want: []Warning{{PrototypeNamespace: "ns", Prototype: "db", Message: derive.EvictionStrategyOverridden(&migrating)}},
	}, {
		name: "a prototype no row shows",
		inv: Inventory{Query: Query{Prototype: "web"}, Pods: ptrs(agent("a", "web"), agent("b", "db", deleteTimeout("5s"))),
			Prototypes: ptrs(slow, migrating), VMs: ptrs(vm("web", "a"), vm("db", "b"))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Warnings(&tt.inv, Pair(&tt.inv, t0, NotReadyGrace))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarningString(t *testing.T) {
	w := Warning{PrototypeNamespace: "protos", Prototype: "web", Message: "it asks for more"}
	if got, want := w.String(), "prototype protos/web: it asks for more"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
