package stuck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The conditions below are as KubeVirt v1.7.0's virt-controller writes them
// (pkg/virt-controller/watch/vm/vm.go syncConditions and
// processFailureCondition; vmi/lifecycle.go), with messages seen on the
// e2e cluster.
func TestOf(t *testing.T) {
	for _, tt := range ofCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Of(tt.vm)
			if tt.want == nil {
				if ok {
					t.Fatalf("Of() = %+v; want no problem", got)
				}
				return
			}
			if !ok {
				t.Fatalf("Of() found no problem; want %+v", *tt.want)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("Of() (-want +got):\n%s", diff)
			}
		})
	}
}

// ofCase is a VM and the problem Of finds in it, nil for none.
type ofCase struct {
	name string
	vm   *kubevirtv1.VirtualMachine
	want *Problem
}

func ofCases() []ofCase {
	scheduler := "0/4 nodes are available: 1 Insufficient memory, 3 node(s) didn't match Pod's node affinity/selector. " +
		"preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling."
	return []ofCase{{
		name: "running",
		vm:   vm(kubevirtv1.VirtualMachineStatusRunning),
	}, {
		name: "starting normally",
		vm:   vm(kubevirtv1.VirtualMachineStatusStarting),
	}, {
		name: "unschedulable on its node",
		vm: vm(kubevirtv1.VirtualMachineStatusUnschedulable,
			cond("PodScheduled", corev1.ConditionFalse, "Unschedulable", scheduler)),
		want: &Problem{Reason: ReasonUnschedulable, Message: "VM cannot be scheduled on its node: Insufficient memory", HasInstance: true},
	}, {
		// As kube-scheduler 1.36 words it.
		name: "unschedulable, with claims and preemption after the reasons",
		vm: vm(kubevirtv1.VirtualMachineStatusUnschedulable,
			cond("PodScheduled", corev1.ConditionFalse, "Unschedulable",
				"0/4 nodes are available: 1 Insufficient memory, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "+
					"no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")),
		want: &Problem{Reason: ReasonUnschedulable, Message: "VM cannot be scheduled on its node: Insufficient memory", HasInstance: true},
	}, {
		name: "unschedulable on an extended resource",
		vm: vm(kubevirtv1.VirtualMachineStatusUnschedulable,
			cond("PodScheduled", corev1.ConditionFalse, "Unschedulable",
				"0/3 nodes are available: 1 Insufficient devices.kubevirt.io/kvm, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")),
		want: &Problem{Reason: ReasonUnschedulable, Message: "VM cannot be scheduled on its node: Insufficient devices.kubevirt.io/kvm", HasInstance: true},
	}, {
		name: "unschedulable for several reasons",
		vm: vm(kubevirtv1.VirtualMachineStatusUnschedulable,
			cond("PodScheduled", corev1.ConditionFalse, "Unschedulable",
				"0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")),
		want: &Problem{Reason: ReasonUnschedulable, Message: "VM cannot be scheduled on its node: Insufficient cpu, Insufficient memory", HasInstance: true},
	}, {
		name: "unschedulable, a message of another shape kept whole",
		vm: vm(kubevirtv1.VirtualMachineStatusUnschedulable,
			cond("PodScheduled", corev1.ConditionFalse, "Unschedulable", "no nodes available to schedule pods")),
		want: &Problem{Reason: ReasonUnschedulable, Message: "VM cannot be scheduled on its node: no nodes available to schedule pods", HasInstance: true},
	}, {
		name: "PVC missing",
		vm: vm(kubevirtv1.VirtualMachineStatusPvcNotFound,
			cond("Synchronized", corev1.ConditionFalse, "FailedPvcNotFound", "PVC vms/disk does not exist, waiting for it to appear")),
		want: &Problem{Reason: ReasonPVCNotFound, Message: "VM's PVC is missing: PVC vms/disk does not exist, waiting for it to appear", HasInstance: true},
	}, {
		name: "DataVolume refused by the API server (no CDI): Stopped with a Failure condition",
		vm: vm(kubevirtv1.VirtualMachineStatusStopped,
			cond("Failure", corev1.ConditionTrue, "FailedCreate",
				"Error encountered while creating DataVolumes: failed to create DataVolume: the server could not find the requested resource (post datavolumes.cdi.kubevirt.io)")),
		want: &Problem{Reason: ReasonDataVolume, Message: "VM's DataVolume cannot be created: the server could not find the requested resource (post datavolumes.cdi.kubevirt.io)"},
	}, {
		name: "DataVolume failed",
		vm:   vm(kubevirtv1.VirtualMachineStatusDataVolumeError),
		want: &Problem{Reason: ReasonDataVolume, Message: "VM's DataVolume failed"},
	}, {
		name: "image cannot be pulled",
		vm: vm(kubevirtv1.VirtualMachineStatusErrImagePull,
			cond("Synchronized", corev1.ConditionFalse, "ErrImagePull", `failed to pull and unpack image "example.com/nope:1": not found`)),
		want: &Problem{Reason: ReasonImagePull, Message: `VM's image cannot be pulled: failed to pull and unpack image "example.com/nope:1": not found`, HasInstance: true},
	}, {
		name: "image pull backing off",
		vm: vm(kubevirtv1.VirtualMachineStatusImagePullBackOff,
			cond("Synchronized", corev1.ConditionFalse, "ImagePullBackOff", `Back-off pulling image "example.com/nope:1"`)),
		want: &Problem{Reason: ReasonImagePull, Message: `VM's image cannot be pulled: Back-off pulling image "example.com/nope:1"`, HasInstance: true},
	}, {
		name: "crash loop",
		vm: func() *kubevirtv1.VirtualMachine {
			v := vm(kubevirtv1.VirtualMachineStatusCrashLoopBackOff)
			v.Status.StartFailure = &kubevirtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 3}
			return v
		}(),
		want: &Problem{Reason: ReasonCrashLoop, Message: "VM keeps failing to start: 3 failed starts in a row"},
	}, {
		name: "launcher Pod refused by a quota",
		vm: vm(kubevirtv1.VirtualMachineStatusStarting,
			cond("Synchronized", corev1.ConditionFalse, "FailedCreate",
				`failed to create virtual machine pod: pods "virt-launcher-x" is forbidden: exceeded quota: q, requested: memory=1Gi, used: memory=1Gi, limited: memory=1Gi`)),
		want: &Problem{Reason: ReasonLauncherRefused, HasInstance: true,
			Message: `VM's launcher Pod cannot be created: pods "virt-launcher-x" is forbidden: exceeded quota: q, requested: memory=1Gi, used: memory=1Gi, limited: memory=1Gi`},
	}, {
		name: "another sync error",
		vm:   vm(kubevirtv1.VirtualMachineStatusStopped, cond("Failure", corev1.ConditionTrue, "FailedCreate", "Failure while starting VMI: admission webhook denied")),
		want: &Problem{Reason: ReasonStartFailed, Message: "VM cannot start: Failure while starting VMI: admission webhook denied"},
	}, {
		name: "a Failure condition that is False is no failure",
		vm:   vm(kubevirtv1.VirtualMachineStatusStarting, cond("Failure", corev1.ConditionFalse, "", "old")),
	}, {
		name: "stopped by hand",
		vm: func() *kubevirtv1.VirtualMachine {
			v := vm(kubevirtv1.VirtualMachineStatusStopped)
			v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
			return v
		}(),
		want: &Problem{Reason: ReasonStopped, Message: "VM stopped (runStrategy Halted): someone stopped it; `virtctl start web-0` starts it again"},
	}, {
		name: "being deleted",
		vm: func() *kubevirtv1.VirtualMachine {
			v := vm(kubevirtv1.VirtualMachineStatusUnschedulable, cond("PodScheduled", corev1.ConditionFalse, "Unschedulable", scheduler))
			v.DeletionTimestamp = &metav1.Time{}
			return v
		}(),
	}}
}

// TestEveryMessageStartsWithItsPrefix: the troubleshooting table's rows are
// found by these prefixes.
func TestEveryMessageStartsWithItsPrefix(t *testing.T) {
	for _, s := range []kubevirtv1.VirtualMachinePrintableStatus{
		kubevirtv1.VirtualMachineStatusUnschedulable, kubevirtv1.VirtualMachineStatusPvcNotFound,
		kubevirtv1.VirtualMachineStatusDataVolumeError, kubevirtv1.VirtualMachineStatusErrImagePull,
		kubevirtv1.VirtualMachineStatusImagePullBackOff, kubevirtv1.VirtualMachineStatusCrashLoopBackOff,
	} {
		p, ok := Of(vm(s))
		if !ok {
			t.Errorf("%s: no problem", s)
			continue
		}
		if !hasPrefix(p.Message) {
			t.Errorf("%s: message %q starts with no State's Prefix", s, p.Message)
		}
	}
}

func hasPrefix(msg string) bool {
	for _, s := range States() {
		if strings.HasPrefix(msg, s.Prefix) {
			return true
		}
	}
	return false
}

func vm(status kubevirtv1.VirtualMachinePrintableStatus, conds ...kubevirtv1.VirtualMachineCondition) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "vms"},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways)},
		Status:     kubevirtv1.VirtualMachineStatus{PrintableStatus: status, Conditions: conds},
	}
}

func cond(t string, status corev1.ConditionStatus, reason, msg string) kubevirtv1.VirtualMachineCondition {
	return kubevirtv1.VirtualMachineCondition{Type: kubevirtv1.VirtualMachineConditionType(t), Status: status, Reason: reason, Message: msg}
}

// TestShortenKeepsOneLineOfMaxCause: a cause may quote a whole API error.
func TestShortenKeepsOneLineOfMaxCause(t *testing.T) {
	long := strings.Repeat("word\n ", 100)
	got := shorten(long)
	if n := len([]rune(got)); n != maxCause {
		t.Errorf("shorten() kept %d runes; want %d", n, maxCause)
	}
	if !strings.HasSuffix(got, "…") || strings.Contains(got, "\n") {
		t.Errorf("shorten() = %q; want one line ending in …", got)
	}
	if got := shorten("fits.\n"); got != "fits" {
		t.Errorf("shorten(%q) = %q; want %q", "fits.\n", got, "fits")
	}
}
