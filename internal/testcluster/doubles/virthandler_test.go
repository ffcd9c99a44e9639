package doubles

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestNextPhase(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		phase    kubevirtv1.VirtualMachineInstancePhase
		node     string
		deleting bool
		want     kubevirtv1.VirtualMachineInstancePhase
	}{
		{"handed over: the guest boots", kubevirtv1.Scheduled, "node-0", false, kubevirtv1.Running},
		{"scheduled without a node is not handed over", kubevirtv1.Scheduled, "", false, ""},
		{"pending: virt-controller's turn", kubevirtv1.Pending, "", false, ""},
		{"scheduling: the launcher Pod is not ready", kubevirtv1.Scheduling, "", false, ""},
		{"running stays running", kubevirtv1.Running, "node-0", false, ""},
		{"running and deleted: the guest shuts down", kubevirtv1.Running, "node-0", true, kubevirtv1.Succeeded},
		{"scheduled and deleted: the guest shuts down", kubevirtv1.Scheduled, "node-0", true, kubevirtv1.Succeeded},
		{"scheduling and deleted: no guest to stop", kubevirtv1.Scheduling, "", true, ""},
		{"already final", kubevirtv1.Failed, "node-0", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: tt.phase, NodeName: tt.node}}
			if tt.deleting {
				vmi.DeletionTimestamp = &now
			}
			if got := nextPhase(vmi); got != tt.want {
				t.Errorf("nextPhase = %q, want %q", got, tt.want)
			}
		})
	}
}
