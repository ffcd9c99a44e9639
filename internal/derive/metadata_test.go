package derive

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func podOwner(p Pod) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}}
}

func TestVMObjectMeta(t *testing.T) {
	pod := testPod()
	longPod := pod
	longPod.Name = "web-" + strings.Repeat("w", 59) // 63 characters, the most a Pod's name has

	for _, tc := range []struct {
		name  string
		proto func(*kubevirtv1.VirtualMachine)
		pod   Pod
		opts  Options
		want  metav1.ObjectMeta
	}{
		{
			name: "vmctl labels and annotations, owned by the pod",
			pod:  pod,
			want: metav1.ObjectMeta{
				Name: "fedora-web-7c9d", Namespace: "vms",
				Labels: map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{
					contract.AnnotationPodName: "web-7c9d", contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "1",
				},
				OwnerReferences: podOwner(pod),
			},
		},
		{
			name: "prototype labels and annotations are copied, bookkeeping and object identity are not",
			proto: func(p *kubevirtv1.VirtualMachine) {
				p.Labels = map[string]string{"app": "fedora"}
				p.Annotations = map[string]string{
					"description": "worker",
					"kubectl.kubernetes.io/last-applied-configuration": "{}",
					"kubevirt.io/latest-observed-api-version":          "v1",
					"kubevirt.io/storage-observed-api-version":         "v1",
				}
				p.UID = "proto-uid"
				p.ResourceVersion = "42"
				p.Generation = 7
				p.GenerateName = "fedora-"
				p.CreationTimestamp = metav1.Unix(1700000000, 0)
				p.DeletionTimestamp = ptr.To(metav1.Unix(1700000100, 0))
				p.DeletionGracePeriodSeconds = ptr.To[int64](30)
				p.Finalizers = []string{"kubevirt.io/virtualMachineControllerFinalize"}
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x"}}
				p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
				p.Status = kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusStopped, Ready: true}
			},
			pod: pod,
			want: metav1.ObjectMeta{
				Name: "fedora-web-7c9d", Namespace: "vms",
				Labels: map[string]string{"app": "fedora", contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{
					"description":              "worker",
					contract.AnnotationPodName: "web-7c9d", contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "7", contract.AnnotationPrototypeUID: "proto-uid",
				},
				OwnerReferences: podOwner(pod),
			},
		},
		{
			name: "another namespace gets no ownerReference",
			pod:  pod,
			opts: Options{Namespace: "elsewhere"},
			want: metav1.ObjectMeta{
				Name: "fedora-web-7c9d", Namespace: "elsewhere",
				Labels: map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{
					contract.AnnotationPodName: "web-7c9d", contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "1",
				},
			},
		},
		{
			name: "the pod's namespace named explicitly keeps the ownerReference",
			pod:  pod,
			opts: Options{Namespace: "vms"},
			want: metav1.ObjectMeta{
				Name: "fedora-web-7c9d", Namespace: "vms",
				Labels: map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{
					contract.AnnotationPodName: "web-7c9d", contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "1",
				},
				OwnerReferences: podOwner(pod),
			},
		},
		{
			name: "a VM revision is recorded on the VM",
			pod:  pod,
			opts: Options{VMRevisionHash: "5f1c0b9e2a"},
			want: metav1.ObjectMeta{
				Name: "fedora-web-7c9d", Namespace: "vms",
				Labels: map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{
					contract.AnnotationPodName: "web-7c9d", contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "1", contract.AnnotationVMRevision: "5f1c0b9e2a",
				},
				OwnerReferences: podOwner(pod),
			},
		},
		{
			name: "a long pod name is kept whole in the label, and cut in the VM's name",
			pod:  longPod,
			want: metav1.ObjectMeta{
				Name: "fedora-web-" + strings.Repeat("w", 41) + "-" + contract.UIDSuffix("pod-uid-1"), Namespace: "vms",
				Labels: map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: longPod.Name},
				Annotations: map[string]string{
					contract.AnnotationPodName: longPod.Name, contract.AnnotationPodNamespace: "vms", contract.AnnotationPodUID: "pod-uid-1",
					contract.AnnotationNode: "node-a", contract.AnnotationPrototypeName: "fedora", contract.AnnotationPrototypeNamespace: "vms",
					contract.AnnotationPrototypeGeneration: "1",
				},
				OwnerReferences: podOwner(longPod),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			if tc.proto != nil {
				tc.proto(proto)
			}
			vm := mustVM(t, proto, tc.pod, tc.opts)
			if diff := cmp.Diff(tc.want, vm.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			wantType := metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"}
			if diff := cmp.Diff(wantType, vm.TypeMeta); diff != "" {
				t.Errorf("type (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(kubevirtv1.VirtualMachineStatus{}, vm.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVMTemplateMeta(t *testing.T) {
	vmctl := map[string]string{contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"}
	for _, tc := range []struct {
		name string
		in   metav1.ObjectMeta
		opts Options
		want metav1.ObjectMeta
	}{
		{
			name: "no template metadata",
			want: metav1.ObjectMeta{Labels: vmctl},
		},
		{
			name: "template labels and annotations are kept",
			in: metav1.ObjectMeta{
				Labels:      map[string]string{"app": "fedora", "kubevirt.io/domain": "fedora"},
				Annotations: map[string]string{"vm.kubevirt.io/flavor": "small"},
			},
			want: metav1.ObjectMeta{
				Labels:      map[string]string{"app": "fedora", "kubevirt.io/domain": "fedora", contract.LabelPrototype: "fedora", contract.LabelPod: "web-7c9d"},
				Annotations: map[string]string{"vm.kubevirt.io/flavor": "small"},
			},
		},
		{
			// The VMI and its launcher Pod are the VM's: the VM alone says
			// which revision it runs.
			name: "a VM revision stays off the template",
			in:   metav1.ObjectMeta{Annotations: map[string]string{"vm.kubevirt.io/flavor": "small"}},
			opts: Options{VMRevisionHash: "5f1c0b9e2a"},
			want: metav1.ObjectMeta{Labels: vmctl, Annotations: map[string]string{"vm.kubevirt.io/flavor": "small"}},
		},
		{
			name: "name, namespace and generateName are cleared",
			in:   metav1.ObjectMeta{Name: "fedora", Namespace: "vms", GenerateName: "fedora-"},
			want: metav1.ObjectMeta{Labels: vmctl},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.Template.ObjectMeta = tc.in
			vm := mustVM(t, proto, testPod(), tc.opts)
			if diff := cmp.Diff(tc.want, vm.Spec.Template.ObjectMeta); diff != "" {
				t.Errorf("template metadata (-want +got):\n%s", diff)
			}
		})
	}
}
