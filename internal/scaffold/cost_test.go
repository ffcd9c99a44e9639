package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// createCostLimit is what the create policy may cost on one admission, in
// the units of the API server's runtime cost budget: a tenth of that
// budget (celconfig.RuntimeCELCostBudget), so that a prototype ten times
// the largest the tests know still passes.
const createCostLimit = celconfig.RuntimeCELCostBudget / 10

// costCase is a prototype to derive a VM from and admit it.
type costCase struct {
	name  string
	proto *kubevirtv1.VirtualMachine
}

// costCases are every prototype the repository's tests and docs use, and
// one far larger than any.
func costCases(t testing.TB) []costCase {
	t.Helper()
	var cases []costCase
	paths, _ := filepath.Glob("../../testdata/*.yaml")
	paths = append(paths, "../derive/testdata/fedora-prototype.yaml", "../drift/testdata/prototype.yaml")
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		proto := &kubevirtv1.VirtualMachine{}
		if err := yaml.Unmarshal(b, proto); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		cases = append(cases, costCase{filepath.Join("internal/scaffold", path), proto})
	}
	f := newFleet(t, reserving)
	richPrototype(f)
	cases = append(cases, costCase{"the rich prototype of TestCreatePolicyRefusesEveryChange", f.proto}, costCase{"32 of each list", largePrototype(f.proto)})
	return cases
}

// largePrototype is proto with 32 volumes, disks, dataVolumeTemplates,
// interfaces, networks and node selector terms: more of each than any
// prototype the tests know.
func largePrototype(proto *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	proto = proto.DeepCopy()
	spec := &proto.Spec.Template.Spec
	terms := &spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range 32 {
		name := fmt.Sprintf("extra-%d", i)
		t := proto.Spec.DataVolumeTemplates[1].DeepCopy()
		t.Name = name
		proto.Spec.DataVolumeTemplates = append(proto.Spec.DataVolumeTemplates, *t)
		spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: name}}})
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: name})
		spec.Domain.Devices.Interfaces = append(spec.Domain.Devices.Interfaces, kubevirtv1.Interface{Name: name,
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
		spec.Networks = append(spec.Networks, kubevirtv1.Network{Name: name, NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: name}}})
		*terms = append(*terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: name, Operator: corev1.NodeSelectorOpExists}}})
	}
	return proto
}

// createCost is what admitting vm costs the create policy compiled as
// kube-apiserver compiles it, with param as its parameter, in the runtime
// cost budget's units, and whether every validation held.
func createCost(t testing.TB, f *fleet, policy *admissionregistrationv1.ValidatingAdmissionPolicy, param, vm runtime.Object) (int64, bool) {
	t.Helper()
	decls := admissioncel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: true}
	compiler, err := admissioncel.NewCompositedCompiler(environment.MustBaseEnvSet(version.MajorMinor(1, 30)))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range policy.Spec.Variables {
		compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, decls, environment.NewExpressions)
	}
	var validations []admissioncel.ExpressionAccessor
	for _, v := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
	}
	eval := compiler.CompileCondition(validations, decls, environment.NewExpressions)
	obj := vm.(metav1.Object)
	kind := kubevirtv1.VirtualMachineGroupVersionKind
	gvr := kubevirtv1.SchemeGroupVersion.WithResource(virtualMachines)
	attrs := &admission.VersionedAttributes{
		Attributes:      admission.NewAttributesRecord(vm, nil, kind, obj.GetNamespace(), obj.GetName(), gvr, "", admission.Create, nil, false, f.user(podToken)),
		VersionedObject: vm, VersionedKind: kind,
	}
	request := admissioncel.CreateAdmissionRequest(attrs.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(kind))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}
	results, remaining, err := eval.ForInput(t.Context(), attrs, request, admissioncel.OptionalVariableBindings{VersionedParams: param}, ns, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatal(err)
	}
	held := true
	for _, r := range results {
		if r.Error != nil || r.EvalResult == nil || r.EvalResult.Value() != true {
			held = false
		}
	}
	return celconfig.RuntimeCELCostBudget - remaining, held
}

// TestCreatePolicyCost: admitting the VM derived from each prototype costs
// the create policy at most createCostLimit of the API server's runtime
// budget for one binding, and admits it.
func TestCreatePolicyCost(t *testing.T) {
	for _, c := range costCases(t) {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(t, reserving)
			c.proto.Name, c.proto.Namespace, c.proto.UID, c.proto.Generation = f.proto.Name, f.proto.Namespace, f.proto.UID, f.proto.Generation
			f.proto = c.proto
			opts := f.p.DeriveOptions()
			opts.AllowSharedVolumes = true
			vm := f.deriveVM(t, f.pod, opts)
			size, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(vm)
			b, _ := yaml.Marshal(size)
			cost, held := createCost(t, f, f.p.admissionPolicy(), f.param(t), admitted(vm))
			t.Logf("%d bytes of VM: cost %d of %d (%.2f %%)", len(b), cost, celconfig.RuntimeCELCostBudget, 100*float64(cost)/celconfig.RuntimeCELCostBudget)
			if !held {
				t.Errorf("the derived VM is refused")
			}
			if cost > createCostLimit {
				t.Errorf("cost %d, more than %d", cost, createCostLimit)
			}
		})
	}
}

// BenchmarkCreatePolicy is one admission of a derived VM by the create
// policy (and the guard, which sees every VM create too) in
// kube-apiserver's own plugin, for the rich prototype, whose revision
// store its informer holds.
func BenchmarkCreatePolicy(b *testing.B) {
	f := newFleet(b, reserving)
	richPrototype(f)
	api := newAPIServer(b, b, f.policies(b), nil)
	vm, _ := richVM(b, f)
	r := request{op: admission.Create, object: &unstructured.Unstructured{Object: vm}}
	api.hold(b, namespace(f.p.Namespace), f.param(b))
	for b.Loop() {
		if err := api.admit(f, r, nil); err != nil {
			b.Fatal(err)
		}
	}
}
