//go:build kubevirt_v1_7

package main

import (
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// releaseCRDs are v1.7.0's install strategy CRDs beyond installCRDs: none.
var releaseCRDs []func() (*extv1.CustomResourceDefinition, error)

func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace)
}

// handlerDaemonSet is virt-handler's DaemonSet as v1.7.0's virt-operator
// makes it with default settings.
func handlerDaemonSet(version string) runtime.Object {
	return components.NewHandlerDaemonSet(namespace, registry, "", version, version, version, version,
		"", "", "", "", "", "", "", corev1.PullIfNotPresent, nil, nil, "2", nil, false)
}
