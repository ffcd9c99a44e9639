package scaffold

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// policyPlugin is k8s.io/apiserver's ValidatingAdmissionPolicy plugin in
// its test context, which feeds it from fake informers.
type policyPlugin = generic.PolicyTestContext[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, validating.Validator]

// apiServer is kube-apiserver's admission by ValidatingAdmissionPolicies:
// k8s.io/apiserver's own plugin (generic.NewPolicyTestContext with
// validating.NewDispatcher), whose informers hold policies, their bindings
// and the objects those read (namespaces, parameters). The plugin, not the
// test, decides which policy and binding match a request, which parameter
// each binding gets, and what its validationActions do.
type apiServer struct {
	plugin *policyPlugin
	// held is what hold last gave the informers, by kind, namespace and
	// name.
	held map[string]runtime.Object
}

// newAPIServer is the plugin with policies and their bindings, as bind
// changes them (nil: as scaffolded), and objects, started. t reports its
// failures; it stops when owner ends, which may be a test t is a subtest
// of, so that the subtests share it: starting one takes a tenth of a
// second.
func newAPIServer(t, owner testing.TB, policies []boundPolicy, bind func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding), objects ...runtime.Object) *apiServer {
	t.Helper()
	s := unstartedAPIServer(t, owner, policies, bind, objects...)
	if err := s.plugin.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// unstartedAPIServer is newAPIServer's plugin before its informers start
// and it compiles its policies, which plugin.Start does.
func unstartedAPIServer(t, owner testing.TB, policies []boundPolicy, bind func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding), objects ...runtime.Object) *apiServer {
	t.Helper()
	compiled := map[string]validating.Validator{}
	var initial []runtime.Object
	for _, obj := range objects {
		// The test context writes its resourceVersion into what it is given.
		initial = append(initial, obj.DeepCopyObject())
	}
	for _, bp := range policies {
		compiled[bp.policy.Name] = bp.validator
		p, b := bp.policy.DeepCopy(), bp.binding.DeepCopy()
		// The test context stores policies and bindings under its own kinds.
		p.TypeMeta, b.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		apiDefaults(p.Spec.MatchConstraints)
		apiDefaults(b.Spec.MatchResources)
		if bind != nil {
			bind(b)
		}
		initial = append(initial, p, b)
	}
	plugin, stop, err := generic.NewPolicyTestContext(owner,
		validating.NewValidatingAdmissionPolicyAccessor, validating.NewValidatingAdmissionPolicyBindingAccessor,
		// Compiled beforehand: the plugin compiles off the test's goroutine.
		func(p *validating.Policy) validating.Validator { return compiled[p.Name] },
		func(a authorizer.Authorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[validating.PolicyHook] {
			return validating.NewDispatcher(a, generic.NewPolicyMatcher(m))
		},
		initial,
		[]meta.RESTMapping{
			{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Scope: meta.RESTScopeRoot},
			{Resource: revision.StoreGVR, GroupVersionKind: revision.StoreGVR.GroupVersion().WithKind(revision.StoreKind), Scope: meta.RESTScopeNamespace},
		})
	if err != nil {
		t.Fatal(err)
	}
	owner.Cleanup(stop)
	return &apiServer{plugin: plugin, held: map[string]runtime.Object{}}
}

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

// hold has the informers hold objects (namespaces, parameters) as given,
// and waits until the plugin reads each parameter so. An object held
// already as given is left alone: most requests read the last one's
// parameter. The plugin asks the API server for a Namespace its informer
// lacks, so a new one needs no wait.
func (s *apiServer) hold(t testing.TB, objects ...runtime.Object) {
	t.Helper()
	for _, obj := range objects {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind(), m.GetNamespace(), m.GetName())
		if held, ok := s.held[key]; ok && equality.Semantic.DeepEqual(held, obj) {
			continue
		}
		s.held[key] = obj.DeepCopyObject()
		obj = obj.DeepCopyObject()
		if err := s.plugin.Update(obj); err != nil {
			t.Fatal(err)
		}
		if param, ok := obj.(*unstructured.Unstructured); ok {
			s.waitForParam(t, param)
		}
	}
}

// waitForParam waits until the informer of the policies whose paramKind
// is param's holds param, as its resourceVersion tells.
func (s *apiServer) waitForParam(t testing.TB, param *unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.plugin, 5*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		for _, h := range s.plugin.Source.Hooks() {
			kind := h.Policy.Spec.ParamKind
			if h.ParamInformer == nil || kind == nil || kind.APIVersion != param.GetAPIVersion() || kind.Kind != param.GetKind() {
				continue
			}
			got, err := h.ParamInformer.Lister().ByNamespace(param.GetNamespace()).Get(param.GetName())
			if err != nil {
				return false, nil
			}
			m, err := meta.Accessor(got)
			return err == nil && m.GetResourceVersion() == param.GetResourceVersion(), err
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no policy reads %s %s/%s: %v", param.GetKind(), param.GetNamespace(), param.GetName(), err)
	}
}

// admit is the plugin's answer to r, made with the token r names of f's:
// nil, or the refusal. The warnings of bindings that warn go to warned,
// when it is not nil.
func (s *apiServer) admit(f *fleet, r request, warned *warnings) error {
	ctx := context.Context(s.plugin)
	if warned != nil {
		ctx = warning.WithWarningRecorder(ctx, warned)
	}
	target := r.target()
	// Not s.plugin.Dispatch: it passes no user, and the name for the
	// namespace.
	attrs := admission.NewAttributesRecord(r.object, r.oldObject, r.kind(), target.GetNamespace(), target.GetName(),
		r.gvr(), r.subresource, r.op, r.operationOptions(), false, f.user(r.token))
	return s.plugin.Plugin.Dispatch(ctx, attrs, admission.NewObjectInterfacesFromScheme(runtime.NewScheme()))
}

// warnings are what the API server warns of, as its warning recorder
// takes them.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }
