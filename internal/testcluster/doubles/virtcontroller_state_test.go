package doubles

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestVMShouldRun(t *testing.T) {
	strategy := func(s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachineRunStrategy { return &s }
	tests := []struct {
		name        string
		runStrategy *kubevirtv1.VirtualMachineRunStrategy
		running     *bool
		want        bool
	}{
		{name: "Always", runStrategy: strategy(kubevirtv1.RunStrategyAlways), want: true},
		{name: "RerunOnFailure", runStrategy: strategy(kubevirtv1.RunStrategyRerunOnFailure), want: true},
		{name: "Once", runStrategy: strategy(kubevirtv1.RunStrategyOnce), want: true},
		{name: "Halted", runStrategy: strategy(kubevirtv1.RunStrategyHalted), want: false},
		{name: "Manual", runStrategy: strategy(kubevirtv1.RunStrategyManual), want: false},
		{name: "unknown strategy", runStrategy: strategy("Sometimes"), want: false},
		{name: "legacy running true", running: ptr.To(true), want: true},
		{name: "legacy running false", running: ptr.To(false), want: false},
		{name: "nothing set", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: tt.runStrategy, Running: tt.running}}
			if got := vmShouldRun(vm); got != tt.want {
				t.Errorf("vmShouldRun() = %v, want %v", got, tt.want)
			}
		})
	}
}

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func nameIn(values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: values,
	}}}
}

func TestNodeFromAffinity(t *testing.T) {
	hostnameLabel := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"by-label"},
	}}}
	tests := []struct {
		name     string
		affinity *corev1.Affinity
		want     string
	}{
		{name: "no affinity", want: ""},
		{name: "no node affinity", affinity: &corev1.Affinity{}, want: ""},
		{name: "only preferred", affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: nameIn("preferred")}},
		}}, want: ""},
		{name: "matchFields name In", affinity: requiredAffinity(nameIn("node-1")), want: "node-1"},
		{name: "first of several values", affinity: requiredAffinity(nameIn("node-1", "node-2")), want: "node-1"},
		{name: "label expression is not a name", affinity: requiredAffinity(hostnameLabel), want: ""},
		{name: "first term that has one", affinity: requiredAffinity(hostnameLabel, nameIn("node-2"), nameIn("node-3")), want: "node-2"},
		{name: "NotIn does not pin", affinity: requiredAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1"},
		}}}), want: ""},
		{name: "empty values", affinity: requiredAffinity(nameIn()), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeFromAffinity(&kubevirtv1.VirtualMachineInstanceSpec{Affinity: tt.affinity}); got != tt.want {
				t.Errorf("nodeFromAffinity() = %q, want %q", got, tt.want)
			}
		})
	}
}

func testVM(affinity *corev1.Affinity) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "proto-vmctl-0", Namespace: "ns", UID: "vm-uid"},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"app": "web"},
					Annotations: map[string]string{"note": "kept"},
				},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Affinity: affinity,
					Domain:   kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 2}},
				},
			},
		},
	}
}

func TestNewVMIFor(t *testing.T) {
	owner := []metav1.OwnerReference{{
		APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "proto-vmctl-0", UID: "vm-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	t.Run("pinned VM runs on its node", func(t *testing.T) {
		vm := testVM(requiredAffinity(nameIn("node-1")))
		want := &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{
				Name: "proto-vmctl-0", Namespace: "ns", OwnerReferences: owner,
				Labels:      map[string]string{"app": "web", "kubevirt.io/nodeName": "node-1"},
				Annotations: map[string]string{"note": "kept"},
			},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Affinity: requiredAffinity(nameIn("node-1")),
				Domain:   kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 2}},
			},
			Status: kubevirtv1.VirtualMachineInstanceStatus{
				NodeName: "node-1",
				Phase:    kubevirtv1.Running,
				Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
					Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue,
				}},
			},
		}
		if diff := cmp.Diff(want, newVMIFor(vm)); diff != "" {
			t.Errorf("newVMIFor() (-want +got):\n%s", diff)
		}
		if _, ok := vm.Spec.Template.ObjectMeta.Labels["kubevirt.io/nodeName"]; ok {
			t.Error("newVMIFor() changed the VM's template labels")
		}
	})
	t.Run("unpinned VM stays Scheduling", func(t *testing.T) {
		vmi := newVMIFor(testVM(nil))
		want := kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Scheduling}
		if diff := cmp.Diff(want, vmi.Status); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"app": "web"}, vmi.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if vmiReady(vmi) {
			t.Error("vmiReady() = true for a Scheduling VMI")
		}
	})
}

func TestDesiredVMStatus(t *testing.T) {
	ready := newVMIFor(testVM(requiredAffinity(nameIn("node-1"))))
	scheduling := newVMIFor(testVM(nil))
	deleting := ready.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	notReady := ready.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse

	tests := []struct {
		name string
		run  bool
		vmi  *kubevirtv1.VirtualMachineInstance
		want vmStatusFields
	}{
		{name: "stopped", run: false, want: vmStatusFields{PrintableStatus: "Stopped"}},
		{name: "to run, no VMI yet", run: true, want: vmStatusFields{PrintableStatus: "Starting"}},
		{name: "running and ready", run: true, vmi: ready, want: vmStatusFields{Created: true, Ready: true, PrintableStatus: "Running"}},
		{name: "no node", run: true, vmi: scheduling, want: vmStatusFields{Created: true, PrintableStatus: "Starting"}},
		{name: "VMI not ready", run: true, vmi: notReady, want: vmStatusFields{Created: true, PrintableStatus: "Starting"}},
		{name: "to stop, VMI still there", run: false, vmi: ready, want: vmStatusFields{Created: true, PrintableStatus: "Stopping"}},
		{name: "VMI being deleted", run: true, vmi: deleting, want: vmStatusFields{Created: true, PrintableStatus: "Stopping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, desiredVMStatus(tt.run, tt.vmi)); diff != "" {
				t.Errorf("desiredVMStatus() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyVMStatus(t *testing.T) {
	t1, t2 := metav1.Unix(100, 0), metav1.Unix(200, 0)
	running := vmStatusFields{Created: true, Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning}
	stopped := vmStatusFields{PrintableStatus: kubevirtv1.VirtualMachineStatusStopped}

	var status kubevirtv1.VirtualMachineStatus
	if !applyVMStatus(&status, running, t1) {
		t.Fatal("first apply reported no change")
	}
	want := kubevirtv1.VirtualMachineStatus{
		Created: true, Ready: true, PrintableStatus: "Running",
		Conditions: []kubevirtv1.VirtualMachineCondition{{Type: "Ready", Status: corev1.ConditionTrue, LastTransitionTime: t1}},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Fatalf("after Running (-want +got):\n%s", diff)
	}
	if applyVMStatus(&status, running, t2) {
		t.Error("applying the same status again reported a change")
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Fatalf("after a no-op (-want +got):\n%s", diff)
	}

	status.Conditions = append([]kubevirtv1.VirtualMachineCondition{{Type: "Paused", Status: corev1.ConditionFalse}}, status.Conditions...)
	if !applyVMStatus(&status, stopped, t2) {
		t.Fatal("stopping reported no change")
	}
	want = kubevirtv1.VirtualMachineStatus{
		PrintableStatus: "Stopped",
		Conditions: []kubevirtv1.VirtualMachineCondition{
			{Type: "Paused", Status: corev1.ConditionFalse},
			{Type: "Ready", Status: corev1.ConditionFalse, LastTransitionTime: t2},
		},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("after Stopped (-want +got):\n%s", diff)
	}
}
