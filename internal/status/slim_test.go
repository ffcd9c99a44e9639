package status

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// TestSlimKeepsWhatPairReads pairs full objects and their kube.Slim copies: the
// rows and the prototypes' warnings must not differ, and the originals must
// not change.
func TestSlimKeepsWhatPairReads(t *testing.T) {
	full := func() Inventory {
		proto := protoVM("ns", "web", 5)
		proto.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{...}", "keep": "me"}
		proto.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
		proto.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "vms"}
		proto.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{{Name: "root"}}
		// Warnings: a guest longer than Pod a's agent waits (not b's), and
		// an evictionStrategy overridden.
		proto.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](100)
		proto.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrateIfPossible)
		pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, notReadyPod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Args = []string{"web", "--proto-namespace=ns", "--delete-timeout=50s"}
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAME", Value: "a"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "token"}}
			p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{...}", contract.AnnotationVMRevision: "1111111111"}
		})
		running := vmi("ns", "web-a", "n2")
		running.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{
			{Name: "extra"}, {Name: "default", IP: "10.244.0.9", IPs: []string{"10.244.0.9", "fd00::9"}, MAC: "02:00:00:00:00:09"}}
		return Inventory{
			Pods:       ptrs(pod, agentPod("ns", "b", "uid-b", "n1", "web", time.Hour)),
			OwnerPods:  ptrs(agentPod("ns", "m", "uid-m", "n2", "", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				// Pod a pins another revision than its VM was made of.
				derivedVM("ns", "web", 4, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(time.Hour),
					func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationVMRevision] = "2222222222" }),
				derivedVM("ns", "web", 5, "ns", "m", "uid-m", "n2", time.Hour),
				derivedVM("ns", "web", 5, "ns", "gone", "uid-g", "n2", time.Hour),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b", "n1", time.Hour),
			),
			VMIs: ptrs(running, evacuating(vmi("ns", "web-b", "n1"), "n1"),
				unschedulable(vmi("ns", "web-m", ""), "0/3 nodes are available: 1 node(s) were unschedulable.")),
		}
	}
	inv := full()
	slim := Inventory{}
	for i := range inv.Pods {
		slim.Pods = append(slim.Pods, must(kube.Slim(inv.Pods[i])).(*corev1.Pod))
	}
	for i := range inv.OwnerPods {
		slim.OwnerPods = append(slim.OwnerPods, must(kube.Slim(inv.OwnerPods[i])).(*corev1.Pod))
	}
	for i := range inv.Prototypes {
		slim.Prototypes = append(slim.Prototypes, must(kube.Slim(inv.Prototypes[i])).(*kubevirtv1.VirtualMachine))
	}
	for i := range inv.VMs {
		slim.VMs = append(slim.VMs, must(kube.Slim(inv.VMs[i])).(*kubevirtv1.VirtualMachine))
	}
	for i := range inv.VMIs {
		slim.VMIs = append(slim.VMIs, must(kube.Slim(inv.VMIs[i])).(*kubevirtv1.VirtualMachineInstance))
	}
	want := Pair(&inv, t0, NotReadyGrace)
	if len(want) != 4 || !slices.ContainsFunc(want, func(r Row) bool { return slices.Contains(r.Problems, ProblemEvacuating) }) ||
		!slices.ContainsFunc(want, func(r Row) bool { return slices.Contains(r.Problems, ProblemHeldByDrain) }) ||
		!slices.ContainsFunc(want, func(r Row) bool { return r.VMIP == "10.244.0.9" }) ||
		!slices.ContainsFunc(want, func(r Row) bool {
			return slices.Contains(r.Problems, fill(problemRevisionFmt, "2222222222", "1111111111"))
		}) {
		t.Fatalf("the fixture pairs into %d rows, want 4, one evacuating, one held by a drain, one of another revision than its Pod pins and one at 10.244.0.9: %+v", len(want), want)
	}
	slimRows := Pair(&slim, t0, NotReadyGrace)
	if diff := cmp.Diff(want, slimRows); diff != "" {
		t.Errorf("rows of slim objects (-full +slim):\n%s", diff)
	}
	if w := Warnings(&inv, want); len(w) != 2 {
		t.Fatalf("the fixture's prototype gives %d warnings, want 2, its guest's grace period and its evictionStrategy: %+v", len(w), w)
	}
	if diff := cmp.Diff(Warnings(&inv, want), Warnings(&slim, slimRows)); diff != "" {
		t.Errorf("warnings of slim objects (-full +slim):\n%s", diff)
	}
	if diff := cmp.Diff(full(), inv); diff != "" {
		t.Errorf("Slim changed the originals (-want +got):\n%s", diff)
	}
	if p := slim.Prototypes[0]; p.Spec.Template.Spec.Volumes != nil || p.Annotations[corev1.LastAppliedConfigAnnotation] != "" || p.Annotations["keep"] != "me" {
		t.Errorf("slim prototype keeps more of its spec than what places it and what status warns of, or last-applied, or lost an annotation: %+v", p)
	}
	if p := slim.Pods[0]; p.Spec.Volumes != nil || p.Spec.Containers[0].Env != nil || p.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("slim pod keeps volumes, env or last-applied: %+v", p)
	}
}

func must(obj any, err error) any {
	if err != nil {
		panic(err)
	}
	return obj
}
