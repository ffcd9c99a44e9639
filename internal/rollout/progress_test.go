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
	a, b := pod("web-a", "uid-a", "h2"), pod("web-b", "uid-b", "h2")
	going := pod("web-c", "uid-c", "h1")
	going.DeletionTimestamp = &metav1.Time{}
	rolling := testWorkload()
	rolling.Object.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1}
	old := unpinned()
	old.Object.(*appsv1.Deployment).Status = rolledOut().Object.(*appsv1.Deployment).Status
	for _, tt := range []struct {
		name string
		w    Workload
		pods []corev1.Pod
		vms  []kubevirtv1.VirtualMachine
		want Progress
	}{
		{name: "the Deployment still rolling, as kubectl says it", w: rolling,
			want: Progress{Message: `Waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated...`}},
		{name: "rolled out, every VM ready and of the revision; a Pod going away does not count", w: rolledOut(),
			pods: []corev1.Pod{a, b, going}, vms: []kubevirtv1.VirtualMachine{vm(a, "h2", true), vm(b, "h2", true), vm(going, "h1", true)},
			want: Progress{Done: true, Message: `deployment "web" successfully rolled out: 2 VMs ready of VM revision h2`}},
		{name: "VMs named by an older rule", w: rolledOut(),
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{oldRule(vm(a, "h2", true)), oldRule(vm(b, "h2", true))},
			want: Progress{Done: true, Message: `deployment "web" successfully rolled out: 2 VMs ready of VM revision h2`}},
		{name: "a VM not ready yet", w: rolledOut(),
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, "h2", true), vm(b, "h2", false)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready of VM revision h2...`}},
		{name: "a VM of another revision than its Pod pins", w: rolledOut(),
			pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, "h2", true), vm(b, "h1", true)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready of VM revision h2 (1 of revision h1, which their Pods do not pin)...`}},
		{name: "a Pod without its VM", w: rolledOut(), pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, "h2", true)},
			want: Progress{Message: `Waiting for the VMs of deployment "web": 1 of 2 ready of VM revision h2...`}},
		{name: "a template that pins no revision: its VMs ready, whatever they derive from", w: old,
			pods: []corev1.Pod{pod("web-a", "uid-a", ""), pod("web-b", "uid-b", "")}, vms: []kubevirtv1.VirtualMachine{vm(pod("web-a", "uid-a", ""), "", true), vm(pod("web-b", "uid-b", ""), "", true)},
			want: Progress{Done: true, Message: `deployment "web" successfully rolled out: 2 VMs ready (its template pins no VM revision: kubectl vmctl rollout restart testvm pins one)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Observe(tt.w, tt.pods, tt.vms)
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
	sts.Spec.Template.Annotations = map[string]string{contract.AnnotationVMRevision: "h2"}
	w := Workload{Object: sts, Agent: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}}
	p0, p1, p2 := pod("web-0", "u0", "h1"), pod("web-1", "u1", "h1"), pod("web-2", "u2", "h2")
	// Below the partition the Pods and VMs stay as they are; web-2's is
	// rolled.
	got := Observe(w, []corev1.Pod{p0, p1, p2}, []kubevirtv1.VirtualMachine{vm(p0, "h1", true), vm(p1, "h1", true), vm(p2, "h2", true)})
	want := `statefulset "web" successfully rolled out: 1 VMs ready of VM revision h2`
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
		p := Observe(tt.obj, nil, nil)
		if p.Err == nil || p.Err.Error() != tt.want {
			t.Errorf("Observe(%s) error = %v, want %q", tt.obj.Name(), p.Err, tt.want)
		}
	}
}
