package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// rolledOut is testWorkload's Deployment with its rollout done.
func rolledOut() Workload {
	w := testWorkload()
	d := w.Object.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	return w
}

func TestObserve(t *testing.T) {
	a, b := pod("web-a", "uid-a"), pod("web-b", "uid-b")
	going := pod("web-c", "uid-c")
	going.DeletionTimestamp = &metav1.Time{}
	rolling := testWorkload()
	rolling.Object.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1}
	for _, tt := range []struct {
		name string
		w    Workload
		gen  int64
		pods []corev1.Pod
		vms  []kubevirtv1.VirtualMachine
		want Progress
	}{
		{name: "the Deployment still rolling, as kubectl says it", w: rolling, gen: 2,
			want: Progress{Message: `Waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated...`}},
		{name: "rolled out, every VM ready and current; a Pod going away does not count", w: rolledOut(), gen: 2,
			pods: []corev1.Pod{a, b, going}, vms: []kubevirtv1.VirtualMachine{vm(a, 2, true), vm(b, 2, true), vm(going, 1, true)},
			want: Progress{Done: true, Message: `deployment "web" successfully rolled out: 2 VMs ready and derived from prototype vms/testvm generation 2`}},
		{name: "VMs named by an older rule", w: rolledOut(), gen: 2,
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{oldRule(vm(a, 2, true)), oldRule(vm(b, 2, true))},
			want: Progress{Done: true, Message: `deployment "web" successfully rolled out: 2 VMs ready and derived from prototype vms/testvm generation 2`}},
		{name: "a VM not ready yet", w: rolledOut(), gen: 2,
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, 2, true), vm(b, 2, false)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready and derived from prototype vms/testvm generation 2...`}},
		{name: "the Pods rolled out, but a VM derives from an older generation", w: rolledOut(), gen: 3,
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, 3, true), vm(b, 2, true)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready and derived from prototype vms/testvm generation 3 (1 from generation 2: run kubectl vmctl rollout restart testvm)...`}},
		{name: "a Pod without its VM", w: rolledOut(), gen: 2, pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, 2, true)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready and derived from prototype vms/testvm generation 2...`}},
		{name: "the prototype gone", w: rolledOut(), gen: -1, want: Progress{Message: "Waiting for prototype vms/testvm: not found"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Observe(tt.w, Version{Generation: tt.gen}, tt.pods, tt.vms)
			if got.Err != nil || got.Message != tt.want.Message || got.Done != tt.want.Done {
				t.Errorf("Observe() = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

func TestObserveStatefulSetPartition(t *testing.T) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 3, UpdatedReplicas: 1},
	}
	w := Workload{Object: sts, Agent: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}}
	p0, p1, p2 := pod("web-0", "u0"), pod("web-1", "u1"), pod("web-2", "u2")
	// Below the partition the VMs stay as they are; web-2's is rolled.
	got := Observe(w, Version{Generation: 2}, []corev1.Pod{p0, p1, p2}, []kubevirtv1.VirtualMachine{vm(p0, 1, true), vm(p1, 1, true), vm(p2, 2, true)})
	want := `statefulset "web" successfully rolled out: 1 VMs ready and derived from prototype vms/testvm generation 2`
	if !got.Done || got.Message != want {
		t.Errorf("Observe() = %+v, want done: %s", got, want)
	}
}

func TestWorkloadStatusErrors(t *testing.T) {
	onDelete := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}}
	stuck := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: appsv1.DeploymentStatus{
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded"}}}}
	for _, tt := range []struct {
		obj  Workload
		want string
	}{
		{Workload{Object: onDelete}, `rollout status is only available for RollingUpdate strategy type, and daemon set "all" is OnDelete`},
		{Workload{Object: stuck}, `deployment "web" exceeded its progress deadline`},
	} {
		p := Observe(tt.obj, Version{Generation: 1}, nil, nil)
		if p.Err == nil || p.Err.Error() != tt.want {
			t.Errorf("Observe(%s) error = %v, want %q", tt.obj.Name(), p.Err, tt.want)
		}
	}
}
