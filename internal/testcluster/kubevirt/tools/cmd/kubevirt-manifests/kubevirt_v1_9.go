//go:build !kubevirt_v1_7 && !kubevirt_v1_8

package main

import (
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
)

// releaseCRDs are v1.9.0's install strategy CRDs beyond installCRDs: the
// backup CRDs and the plugin CRD.
var releaseCRDs = []func() (*extv1.CustomResourceDefinition, error){
	components.NewVirtualMachineBackupCrd, components.NewVirtualMachineBackupTrackerCrd,
	components.NewPluginCrd,
}
