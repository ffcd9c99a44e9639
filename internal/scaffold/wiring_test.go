package scaffold

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// apiDefaults fills in what the API server's defaulting would for the
// fields upstream's matcher reads and the scaffold leaves unset
// (SetDefaults_MatchResources in k8s.io/kubernetes, which cannot be
// imported).
func apiDefaults(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}
}

// upstreamAdmit sends r through k8s.io/apiserver's own ValidatingAdmissionPolicy
// plugin (generic.NewPolicyTestContext with validating.NewDispatcher), fed
// by fake informers holding the scaffold's policies and bindings, as
// bind changes them, and the objects given (namespaces, parameters). The
// plugin, not this test, decides which policy and binding match r, which
// parameter each binding gets, and what its validationActions do.
func (f *fleet) upstreamAdmit(t *testing.T, bind func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding), objects []runtime.Object, r request) error {
	t.Helper()
	compiled := map[string]validating.Validator{}
	for _, bp := range f.policies(t) {
		compiled[bp.policy.Name] = bp.validator
		p, b := bp.policy.DeepCopy(), bp.binding.DeepCopy()
		// The test context stores policies and bindings under its own kinds.
		p.TypeMeta, b.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		apiDefaults(p.Spec.MatchConstraints)
		apiDefaults(b.Spec.MatchResources)
		if bind != nil {
			bind(b)
		}
		objects = append(objects, p, b)
	}
	t.Cleanup(generic.SetPolicyRefreshIntervalForTests(10 * time.Millisecond))
	ctx, cancel, err := generic.NewPolicyTestContext(t,
		validating.NewValidatingAdmissionPolicyAccessor, validating.NewValidatingAdmissionPolicyBindingAccessor,
		// Compiled beforehand: the policy source compiles off the test's goroutine.
		func(p *validating.Policy) validating.Validator { return compiled[p.Name] },
		func(a authorizer.Authorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[validating.PolicyHook] {
			return validating.NewDispatcher(a, generic.NewPolicyMatcher(m))
		},
		objects,
		[]meta.RESTMapping{
			{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Scope: meta.RESTScopeRoot},
			{Resource: revision.StoreGVR, GroupVersionKind: revision.StoreGVR.GroupVersion().WithKind(revision.StoreKind), Scope: meta.RESTScopeNamespace},
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := ctx.Start(); err != nil {
		t.Fatal(err)
	}
	target := r.target()
	kind := r.object.GetObjectKind().GroupVersionKind()
	// Not ctx.Dispatch: it passes no user, and the name for the namespace.
	attrs := admission.NewAttributesRecord(r.object, r.oldObject, kind, target.GetNamespace(), target.GetName(),
		r.gvr(), r.subresource, r.op, r.operationOptions(), false, f.user(r.token))
	return ctx.Plugin.Dispatch(ctx, attrs, admission.NewObjectInterfacesFromScheme(runtime.NewScheme()))
}

// TestAdmissionWiring checks what only the API server's matching and
// binding decide: which parameter the create policy's binding reads, what
// it does without one, which requests the bindings leave alone, and that
// a refusal refuses.
func TestAdmissionWiring(t *testing.T) {
	f := newFleet(t, nil)
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
			err := f.upstreamAdmit(t, nil, tc.objects, tc.r(t))
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
		for _, bp := range f.policies(t) {
			if got := bp.binding.Spec.ValidationActions; len(got) != 1 || got[0] != admissionregistrationv1.Deny {
				t.Errorf("%s: validationActions %v, want [Deny]", bp.binding.Name, got)
			}
		}
		// Upstream honours the actions: the refused VM passes with Warn.
		warn := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		}
		if err := f.upstreamAdmit(t, warn, []runtime.Object{namespace(f.p.Namespace), param}, bad(t)); err != nil {
			t.Errorf("refused under Warn: %v", err)
		}
	})
}
