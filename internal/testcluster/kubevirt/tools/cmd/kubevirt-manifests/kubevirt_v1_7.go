//go:build kubevirt_v1_7

package main

import (
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// releaseCRDs are v1.7.0's install strategy CRDs beyond installCRDs: none.
var releaseCRDs []func() (*extv1.CustomResourceDefinition, error)

func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace)
}
