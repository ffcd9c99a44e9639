//go:build tools

// Package tools records the KubeVirt commands this module builds.
package tools

import (
	_ "kubevirt.io/kubevirt/cmd/virt-api"
	_ "kubevirt.io/kubevirt/cmd/virt-controller"
)
