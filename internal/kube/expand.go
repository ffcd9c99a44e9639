package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// Expander returns vm with its instancetype and preference applied, as
// KubeVirt applies them to the VM's instances; ExpandSpec is the one that
// asks KubeVirt.
type Expander func(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error)

// ExpandSpec is the Expander that asks virt-api's expand-spec subresource
// about the stored VM vm names: KubeVirt applies the instancetype and
// preference revisions it stores for that VM, and drops the matchers. A VM
// with neither comes back as it is without asking, as KubeVirt's own
// expander returns it.
func ExpandSpec(virt kubevirt.Interface) Expander {
	return func(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
			return vm.DeepCopy(), nil
		}
		ref := vm.Namespace + "/" + vm.Name
		raw, err := virt.KubevirtV1().RESTClient().Get().
			AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", vm.Namespace, "virtualmachines", vm.Name, "expand-spec").
			DoRaw(ctx)
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err) {
				return nil, fmt.Errorf("expand the instancetype and preference of VM %s: %w (KubeVirt's subresource API subresources.kubevirt.io answers this; is virt-api up?)", ref, err)
			}
			return nil, fmt.Errorf("expand the instancetype and preference of VM %s: %w", ref, err)
		}
		out := &kubevirtv1.VirtualMachine{}
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("expand the instancetype and preference of VM %s: read KubeVirt's answer: %w", ref, err)
		}
		return out, nil
	}
}
