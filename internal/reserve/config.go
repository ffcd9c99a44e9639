package reserve

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt's defaults for what the rule reads of its configuration
// (pkg/virt-config/virt-config.go).
const (
	defaultCPUAllocationRatio = 10
	defaultMemoryOvercommit   = 100
	defaultCPURequest         = "100m"
	defaultArch               = "amd64"
)

// config is what virt-api and virt-controller read of the KubeVirt CR, with
// KubeVirt's defaults where it says nothing, as ClusterConfig.GetConfig
// merges spec.configuration over defaultClusterConfig.
type config struct {
	// release is the KubeVirt release whose rules apply (releaseOf).
	release            release
	cpuAllocationRatio int
	memoryOvercommit   int
	// cpuRequest is the cluster's cpuRequest when it is not the default
	// 100m, which setDefaultResourceRequests ignores; else nil.
	cpuRequest    *resource.Quantity
	overheadRatio *string
	support       []kubevirtv1.SupportContainerResources
	serialLogOff  bool
	imageVolume   bool
	evenParity    bool
	bindings      map[string]kubevirtv1.InterfaceBindingPlugin
	arch          string
}

func newConfig(kv *kubevirtv1.KubeVirt) config {
	c := config{cpuAllocationRatio: defaultCPUAllocationRatio, memoryOvercommit: defaultMemoryOvercommit, arch: defaultArch}
	c.release, _ = releaseOf(kv)
	if kv == nil {
		c.imageVolume = gateEnabled(imageVolumeGate, nil, c.release)
		return c
	}
	// setConfigFromKubeVirt: the architecture comes from the CR's status.
	if kv.Status.DefaultArchitecture != "" {
		c.arch = kv.Status.DefaultArchitecture
	}
	spec := kv.Spec.Configuration
	dev := spec.DeveloperConfiguration
	if dev != nil {
		if dev.CPUAllocationRatio > 0 {
			c.cpuAllocationRatio = dev.CPUAllocationRatio
		}
		if dev.MemoryOvercommit > 0 {
			c.memoryOvercommit = dev.MemoryOvercommit
		}
	}
	if q := spec.CPURequest; q != nil && !q.Equal(resource.MustParse(defaultCPURequest)) {
		cp := q.DeepCopy()
		c.cpuRequest = &cp
	}
	c.overheadRatio = spec.AdditionalGuestMemoryOverheadRatio
	c.support = spec.SupportContainerResources
	c.serialLogOff = spec.VirtualMachineOptions != nil && spec.VirtualMachineOptions.DisableSerialConsoleLog != nil
	c.imageVolume = gateEnabled(imageVolumeGate, dev, c.release)
	// ApplyNewVMIMutations copies the CR's even-parity annotation to the VMI
	// only with the AlignCPUs gate.
	_, parity := kv.Annotations[kubevirtv1.EmulatorThreadCompleteToEvenParity]
	c.evenParity = parity && gateEnabled(alignCPUsGate, dev, c.release)
	if spec.NetworkConfiguration != nil {
		c.bindings = spec.NetworkConfiguration.Binding
	}
	return c
}

// supportRequest mirrors ClusterConfig.GetSupportContainerRequest: the
// configured request of a support container, or nil.
func (c config) supportRequest(t kubevirtv1.SupportContainerType, name corev1.ResourceName) *resource.Quantity {
	return c.supportQuantity(t, name, false)
}

// supportLimit mirrors ClusterConfig.GetSupportContainerLimit.
func (c config) supportLimit(t kubevirtv1.SupportContainerType, name corev1.ResourceName) *resource.Quantity {
	return c.supportQuantity(t, name, true)
}

func (c config) supportQuantity(t kubevirtv1.SupportContainerType, name corev1.ResourceName, limit bool) *resource.Quantity {
	for _, s := range c.support {
		if s.Type != t {
			continue
		}
		list := s.Resources.Requests
		if limit {
			list = s.Resources.Limits
		}
		if q := list[name]; !q.IsZero() {
			return &q
		}
	}
	return nil
}
