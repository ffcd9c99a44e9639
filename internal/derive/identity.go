package derive

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// setIdentity gives the VM an identity of its own, so that derived VMs do
// not all claim the prototype's: the Pod's UID as the SMBIOS UUID and
// serial, no MAC address on any interface (KubeVirt or the network assigns
// fresh ones), and the VM's own name as a hostname set on the prototype.
// Left empty, the UUID and serial would get random values from KubeVirt's
// mutating webhook, which the create policy could not tell from values an
// agent chose; the Pod's UID is a UUID, unique, and what the policy knows
// from the agent's bound token.
func setIdentity(spec *kubevirtv1.VirtualMachineInstanceSpec, vmName string, podUID types.UID) {
	if spec.Domain.Firmware == nil {
		spec.Domain.Firmware = &kubevirtv1.Firmware{}
	}
	spec.Domain.Firmware.UUID = podUID
	spec.Domain.Firmware.Serial = string(podUID)
	for i := range spec.Domain.Devices.Interfaces {
		spec.Domain.Devices.Interfaces[i].MacAddress = ""
	}
	if spec.Hostname != "" {
		spec.Hostname = hostname(vmName)
	}
}

// clearInstancetypeRevisions drops the instancetype and preference revisionName. They
// name ControllerRevisions KubeVirt made for the prototype and owns through
// it; each derived VM gets its own, and a copied name would break when the
// prototype is deleted or lives in another namespace.
func clearInstancetypeRevisions(spec *kubevirtv1.VirtualMachineSpec) {
	if spec.Instancetype != nil {
		spec.Instancetype.RevisionName = ""
	}
	if spec.Preference != nil {
		spec.Preference.RevisionName = ""
	}
}

// stableIdentity gives vm the DNS identity of its StatefulSet Pod when
// subdomain is set: hostname the Pod's name, subdomain the headless Service
// that selects the VMs by contract.LabelSubdomain. KubeVirt puts both on the VM's
// launcher Pod, and the EndpointSlice controller then names the launcher
// Pod's address <pod>.<subdomain>.<namespace>.svc, as it does for a
// StatefulSet's own Pods.
func stableIdentity(vm *kubevirtv1.VirtualMachine, pod, subdomain string) {
	if subdomain == "" {
		return
	}
	spec := &vm.Spec.Template.Spec
	spec.Hostname = pod
	spec.Subdomain = subdomain
	vm.Labels[contract.LabelSubdomain] = subdomain
	vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = subdomain
}

// validateSubdomain checks that a subdomain and the Pod's name can make a
// DNS name, as a StatefulSet's Pods' always can.
func validateSubdomain(pod Pod, subdomain string) error {
	if subdomain == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(subdomain); len(msgs) > 0 {
		return fmt.Errorf("subdomain %q is not a valid Service name: %s; give the name of the headless Service that selects the VMs",
			subdomain, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Label(pod.Name); len(msgs) > 0 {
		return fmt.Errorf("the Pod's name %q cannot be the VM's hostname (%s): a subdomain is for StatefulSet Pods, whose names are DNS labels",
			pod.Name, strings.Join(msgs, "; "))
	}
	return nil
}
