package placement

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypeapi "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"kubevirt.io/client-go/kubevirt"
)

// Resolve is Of for vm with the instancetype and preference it refers to,
// read with c: one GET each. A revisionName is not followed: VMs derived
// from vm do not keep it, so they get what the instancetype holds now.
// When one cannot be read, Resolve returns the placement without it, and an
// error that names it and says what is missing.
func Resolve(ctx context.Context, c kubevirt.Interface, vm *kubevirtv1.VirtualMachine) (Placement, error) {
	var src Sources
	var errs []error
	if m := vm.Spec.Instancetype; m != nil && m.Name != "" {
		spec, err := getInstancetype(ctx, c, vm.Namespace, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w; its nodeSelector, schedulerName and CPU model are not counted",
				instancetypeRef(m.Kind, m.Name, ""), err))
		}
		src.Instancetype = spec
	}
	if m := vm.Spec.Preference; m != nil && m.Name != "" {
		spec, err := getPreference(ctx, c, vm.Namespace, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w; its preferred architecture, machine type and CPU features are not counted",
				preferenceRef(m.Kind, m.Name, ""), err))
		}
		src.Preference = spec
	}
	return Of(vm, src), errors.Join(errs...)
}

func getInstancetype(ctx context.Context, c kubevirt.Interface, namespace string, m *kubevirtv1.InstancetypeMatcher) (*instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	it := c.InstancetypeV1beta1()
	switch strings.ToLower(m.Kind) {
	case instancetypeapi.SingularResourceName, instancetypeapi.PluralResourceName:
		obj, err := it.VirtualMachineInstancetypes(namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return &obj.Spec, nil
	}
	obj, err := it.VirtualMachineClusterInstancetypes().Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &obj.Spec, nil
}

func getPreference(ctx context.Context, c kubevirt.Interface, namespace string, m *kubevirtv1.PreferenceMatcher) (*instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	it := c.InstancetypeV1beta1()
	switch strings.ToLower(m.Kind) {
	case instancetypeapi.SingularPreferenceResourceName, instancetypeapi.PluralPreferenceResourceName:
		obj, err := it.VirtualMachinePreferences(namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return &obj.Spec, nil
	}
	obj, err := it.VirtualMachineClusterPreferences().Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &obj.Spec, nil
}
