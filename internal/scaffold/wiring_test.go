package scaffold

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestAdmissionWiring checks what only the API server's matching and
// binding decide: which parameter the create policy's binding reads, what
// it does without one, which requests the bindings leave alone, and that
// a refusal refuses.
func TestAdmissionWiring(t *testing.T) {
	f := newFleet(t, nil)
	policies := f.policies(t)
	param := f.param(t).(*unstructured.Unstructured)
	moved := func(change func(*unstructured.Unstructured)) runtime.Object {
		u := param.DeepCopy()
		change(u)
		return u
	}
	const notFound = "no params found for policy binding with `Deny` parameterNotFoundAction"
	good := func(t *testing.T) request { return create(f.own(t, nil)) }
	bad := func(t *testing.T) request {
		return create(f.own(t, func(vm *kubevirtv1.VirtualMachine) { vm.Annotations["x"] = "y" }))
	}
	elsewhere := func(t *testing.T) request {
		return create(f.own(t, func(vm *kubevirtv1.VirtualMachine) { vm.Namespace = "elsewhere"; vm.Annotations["x"] = "y" }))
	}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		r       func(*testing.T) request
		because string // "" admits
	}{
		{"a derived VM, its store present", []runtime.Object{namespace(f.p.Namespace), param}, good, ""},
		{"a refused VM, its store present", []runtime.Object{namespace(f.p.Namespace), param}, bad, ruleAnnotations},
		{"no revision store", []runtime.Object{namespace(f.p.Namespace)}, good, notFound},
		{"a store of another name", []runtime.Object{namespace(f.p.Namespace),
			moved(func(u *unstructured.Unstructured) { u.SetName(u.GetName() + "-other") })}, good, notFound},
		{"the store in another namespace", []runtime.Object{namespace(f.p.Namespace), namespace("elsewhere"),
			moved(func(u *unstructured.Unstructured) { u.SetNamespace("elsewhere") })}, good, notFound},
		{"a VM outside the policies' namespace", []runtime.Object{namespace(f.p.Namespace), namespace("elsewhere"), param}, elsewhere, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newAPIServer(t, t, policies, nil, tc.objects...).admit(f, tc.r(t), nil)
			switch {
			case tc.because == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.because != "" && err == nil:
				t.Errorf("admitted, want refused because %q", tc.because)
			case tc.because != "" && !strings.Contains(err.Error(), tc.because):
				t.Errorf("refused with %v, want because %q", err, tc.because)
			}
		})
	}
	t.Run("bindings deny", func(t *testing.T) {
		for _, bp := range policies {
			if got := bp.binding.Spec.ValidationActions; len(got) != 1 || got[0] != admissionregistrationv1.Deny {
				t.Errorf("%s: validationActions %v, want [Deny]", bp.binding.Name, got)
			}
		}
		// Upstream honours the actions: the refused VM passes with Warn.
		warn := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		}
		if err := newAPIServer(t, t, policies, warn, namespace(f.p.Namespace), param).admit(f, bad(t), nil); err != nil {
			t.Errorf("refused under Warn: %v", err)
		}
	})
}
