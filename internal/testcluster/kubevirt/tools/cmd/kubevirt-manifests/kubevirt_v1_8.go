//go:build !kubevirt_v1_7

package main

import (
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// releaseCRDs are v1.8.0's install strategy CRDs beyond installCRDs: the
// backup CRDs.
var releaseCRDs = []func() (*extv1.CustomResourceDefinition, error){
	components.NewVirtualMachineBackupCrd, components.NewVirtualMachineBackupTrackerCrd,
}

// controllerRBAC is virt-controller's RBAC as a default install has it:
// without external network resource injection, with the
// NetworkAttachmentDefinition rules.
func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace, true)
}
