//go:build !kubevirt_v1_7

package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
	operatorutil "kubevirt.io/kubevirt/pkg/virt-operator/util"
)

// controllerRBAC is virt-controller's RBAC as a default install has it:
// without external network resource injection, with the
// NetworkAttachmentDefinition rules.
func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace, true)
}

// handlerDaemonSet is virt-handler's DaemonSet as virt-operator makes it
// for a KubeVirt CR with default settings (v1.8.0 and later).
func handlerDaemonSet(version string) runtime.Object {
	kv := &v1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace},
		Spec:       v1.KubeVirtSpec{ImageRegistry: registry, ImageTag: version, ImagePullPolicy: corev1.PullIfNotPresent},
	}
	return components.NewHandlerDaemonSet(operatorutil.GetTargetConfigFromKV(kv), "", "", "")
}
