package scaffold

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// The policies' rules, each named by a phrase of its refusal's message:
// what the user sees, and so what the cases below expect.
const (
	// The create policy's, with the revision store (or the prototype) as
	// its parameter.
	ruleClaim       = "the VirtualMachine claims"
	ruleName        = "name is not"
	ruleMetadata    = "holds fields a derived VM never has"
	ruleOwner       = "is owned by its agent's Pod alone"
	ruleLabels      = "labels or its template's are not"
	ruleAnnotations = "annotations are not"
	ruleRuns        = "runs always (runStrategy Always"
	ruleIdentity    = "machine identity is not its own"
	rulePin         = "is not pinned to its Pod's node"
	ruleVolumes     = "volumes or dataVolumeTemplates are not"
	ruleDNSName     = "hostname or subdomain is not its own"
	rulePriority    = "priority class is not"
	ruleUnlisted    = "fields not derive's are not"
	// The guard's.
	ruleLabelled = "may only create and delete VMs and VMIs labelled"
	ruleBoundPod = "the request carries no Pod"
	ruleNoUpdate = "never changes a VirtualMachine or a VMI"
	ruleNotProto = "may never change or delete its prototype"
	ruleOwnVM    = "the VirtualMachine is not this Pod's"
	ruleOwnVMI   = "may only delete its own Pod's VMI"
	ruleDelete   = "deletes its VM only on condition of its UID"
	// The event policy's.
	ruleOwnEvent    = "may only record Events about its own Pod"
	ruleEventSigned = "Events are signed vmctl-agent from its own node"
	ruleEventAsMade = "Events have one of its reasons"
	// The pod policy's.
	ruleOwnPod      = "may only resize or evict its own Pod"
	ruleSmaller     = "may only make its own Pod smaller"
	ruleOwnLauncher = "may only change the status of its own VM's launcher Pod"
	ruleNomination  = "may only nominate its VM's launcher Pod to its own node"
)

// ruleOf names the rule whose refusal says message, or "".
func ruleOf(message string) string {
	for _, rule := range allRules() {
		if strings.Contains(message, rule) {
			return rule
		}
	}
	return ""
}

func allRules() []string {
	return []string{ruleClaim, ruleName, ruleMetadata, ruleOwner, ruleLabels, ruleAnnotations, ruleRuns, ruleIdentity, rulePin, ruleVolumes, ruleDNSName, rulePriority, ruleUnlisted,
		ruleLabelled, ruleBoundPod, ruleNoUpdate, ruleNotProto, ruleOwnVM, ruleOwnVMI, ruleDelete, ruleOwnEvent, ruleEventSigned, ruleEventAsMade, ruleOwnPod, ruleSmaller, ruleOwnLauncher, ruleNomination}
}

// The UIDs of the agents' Pods and of the prototype.
const (
	ownPodUID    = types.UID("1f0e4b8c-7d2a-4c55-9a61-0c3d5e7f9a11")
	otherPodUID  = types.UID("8b2c6d1e-3f4a-4b5c-8d9e-0f1a2b3c4d5e")
	prototypeUID = types.UID("uid-prototype")
)

// token is whose credentials a request carries.
type token int

const (
	podToken      token = iota // the requesting agent's Pod's bound token
	otherPodToken              // the other agent's Pod's bound token
	noPodToken                 // the ServiceAccount's, bound to no Pod (a TokenRequest's)
	noUIDToken                 // the ServiceAccount's, with a Pod's name but no UID
	impersonated               // the ServiceAccount, impersonated (kubectl --as): no extra at all
	personToken                // not the agents' ServiceAccount's
)

// prototypeYAML is a prototype with a disk of each kind that derive renames
// (a dataVolume, a persistentVolumeClaim and an ephemeral volume on
// dataVolumeTemplates, the first with labels and annotations, the others
// alike but for their names), a read-only shared claim, an instancetype and a
// preference, a hostname and a template annotation.
const prototypeYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  labels: {app: web}
  annotations: {description: the web tier}
spec:
  runStrategy: Halted
  instancetype: {name: u1.small, kind: VirtualMachineClusterInstancetype}
  preference: {name: fedora, kind: VirtualMachineClusterPreference}
  dataVolumeTemplates:
  - metadata:
      name: root
      labels: {app: web}
      annotations: {cdi.kubevirt.io/storage.bind.immediate.requested: "true"}
    spec:
      source: {registry: {url: "docker://quay.io/containerdisks/fedora:41"}}
      storage: {resources: {requests: {storage: 5Gi}}}
  - metadata: {name: logs}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Gi}}}
  - metadata: {name: base}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Gi}}}
  template:
    metadata:
      labels: {app: web}
      annotations: {vm.kubevirt.io/flavor: small}
    spec:
      hostname: web
      domain:
        devices:
          disks:
          - {name: root, disk: {bus: virtio}}
          - {name: logs, disk: {bus: virtio}}
          - {name: base, disk: {bus: virtio}}
          - {name: shared, disk: {bus: virtio}}
          - {name: containerdisk, disk: {bus: virtio}}
          interfaces:
          - {name: default, masquerade: {}}
      networks:
      - {name: default, pod: {}}
      volumes:
      - {name: root, dataVolume: {name: root}}
      - {name: logs, persistentVolumeClaim: {claimName: logs, readOnly: true}}
      - {name: base, ephemeral: {persistentVolumeClaim: {claimName: base, readOnly: true}}}
      - {name: shared, persistentVolumeClaim: {claimName: shared-data, readOnly: true}}
      - {name: containerdisk, containerDisk: {image: "quay.io/containerdisks/fedora:41"}}
`

// fleet is what a case needs: the scaffold's Params, the prototype and two
// agent Pods, the first of which makes the requests.
type fleet struct {
	p          Params
	proto      *kubevirtv1.VirtualMachine
	pod, other derive.Pod
	// retained are revisions the store holds besides proto's, as rolled
	// out before.
	retained []*kubevirtv1.VirtualMachine
}

// newFleet scaffolds with the policies on, as change makes the Params: a
// workload that pins the revision of the prototype (proto, as it is when
// the case uses it).
func newFleet(t testing.TB, change func(*Params)) *fleet {
	t.Helper()
	p := validParams(KindDeployment)
	p.AdmissionPolicy = true
	if change != nil {
		change(&p)
	}
	proto := &kubevirtv1.VirtualMachine{}
	if err := yaml.UnmarshalStrict([]byte(prototypeYAML), proto); err != nil {
		t.Fatal(err)
	}
	proto.Name, proto.Namespace, proto.UID, proto.Generation = p.Prototype, p.protoNamespace(), prototypeUID, 2
	p.Snapshot = revision.Snapshot(proto)
	p.RevisionHash = mustHash(t, p.Snapshot)
	// As the API server generates them: the ReplicaSet's name, cut to
	// leave room for five random characters.
	base := p.Name + "-7d9f8c6b5-"
	base = base[:min(len(base), contract.MaxNameLength-5)]
	pods := [2]string{base + "abcde", base + "fghij"}
	if p.Kind == KindStatefulSet {
		pods = [2]string{p.Name + "-0", p.Name + "-1"}
	}
	return &fleet{
		p:     p,
		proto: proto,
		pod:   derive.Pod{Name: pods[0], Namespace: p.Namespace, UID: ownPodUID, Node: "node-1"},
		other: derive.Pod{Name: pods[1], Namespace: p.Namespace, UID: otherPodUID, Node: "node-1"},
	}
}

func mustHash(t testing.TB, r *kubevirtv1.VirtualMachine) string {
	t.Helper()
	h, err := revision.Hash(r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// source is what the agents derive from: the revision of proto, as it is
// now, and its hash.
func (f *fleet) source(t testing.TB) (*kubevirtv1.VirtualMachine, string) {
	t.Helper()
	r := revision.Snapshot(f.proto)
	return r, mustHash(t, r)
}

// deriveVM is the VM an agent of pod derives with opts from the source.
func (f *fleet) deriveVM(t testing.TB, pod derive.Pod, opts derive.Options) *kubevirtv1.VirtualMachine {
	t.Helper()
	src, hash := f.source(t)
	opts.VMRevisionHash = hash
	vm, err := derive.VM(src, pod, opts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// param is the create policy's parameter as the API server's informer
// holds it: the revision store, with the revision of proto and those
// retained.
func (f *fleet) param(t testing.TB) runtime.Object {
	t.Helper()
	s := revision.NewStore(f.p.Namespace, f.p.Name)
	for _, r := range append(f.retained, revision.Snapshot(f.proto)) {
		h, err := revision.Hash(r)
		if err != nil {
			t.Fatal(err)
		}
		s.Revisions[h] = r
	}
	obj, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

// vm is the VM an agent of pod derives, as change makes it.
func (f *fleet) vm(t testing.TB, pod derive.Pod, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm := f.deriveVM(t, pod, derive.Options{Namespace: f.p.Namespace, Subdomain: f.p.subdomain(), ReplicaClaims: f.p.replicaClaimNames()})
	if change != nil {
		change(vm)
	}
	return vm
}

// earlier is the VM the requesting agent derives from a revision rolled
// out before the one the fleet pins, which the store retains, as change
// makes it.
func (f *fleet) earlier(t *testing.T, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	older := revision.Snapshot(f.proto)
	older.Spec.Template.ObjectMeta.Labels["release"] = "v1"
	older.Spec.Template.Spec.Domain.Devices.Interfaces[0].Model = "e1000"
	older.Generation--
	f.retained = append(f.retained, older)
	vm, err := derive.VM(older, f.pod, derive.Options{Namespace: f.p.Namespace, Subdomain: f.p.subdomain(), VMRevisionHash: mustHash(t, older)})
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(vm)
	}
	return vm
}

// own is the VM the requesting agent derives, as change makes it.
func (f *fleet) own(t testing.TB, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	return f.vm(t, f.pod, change)
}

// vmi is the VMI KubeVirt makes for vm.
func vmi(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Spec.Template.ObjectMeta.Labels, Annotations: vm.Spec.Template.ObjectMeta.Annotations},
		Spec:       vm.Spec.Template.Spec,
	}
}

// request is one write as the API server admits it.
type request struct {
	op        admission.Operation
	object    runtime.Object // nil for a DELETE
	oldObject runtime.Object // nil for a CREATE
	token     token
	// subresource is a Pod's: resize or eviction.
	subresource string
	// options are a delete's.
	options *metav1.DeleteOptions
}

// evict is an eviction of pod, with uid as its precondition ("" for none).
func evict(pod derive.Pod, uid types.UID) request {
	ev := &policyv1.Eviction{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
	}
	if uid != "" {
		ev.DeleteOptions = &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(uid))}
	}
	return request{op: admission.Create, object: ev, subresource: "eviction"}
}

// resize is a resize of pod to what change makes of it.
func resize(pod *corev1.Pod, change func(*corev1.Pod)) request {
	resized := pod.DeepCopy()
	change(resized)
	return request{op: admission.Update, object: resized, oldObject: pod, subresource: "resize"}
}

// setStatus is a change of pod's status (the pods/status endpoint) to
// what change makes of it.
func setStatus(pod *corev1.Pod, change func(*corev1.Pod)) request {
	changed := pod.DeepCopy()
	change(changed)
	return request{op: admission.Update, object: changed, oldObject: pod, subresource: "status"}
}

// nominateTo sets a Pod's status.nominatedNodeName to node.
func nominateTo(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.NominatedNodeName = node }
}

func create(obj runtime.Object) request { return request{op: admission.Create, object: admitted(obj)} }

// withTemplateCreationTimestamp is r with its VM's
// spec.template.metadata.creationTimestamp set to v, null where v is nil.
func withTemplateCreationTimestamp(r request, v any) request {
	u := r.object.(*unstructured.Unstructured)
	if err := unstructured.SetNestedField(u.Object, v, "spec", "template", "metadata", "creationTimestamp"); err != nil {
		panic(err)
	}
	return r
}

// admitted is obj as the API server hands a create of it to validating
// admission: a VM (a custom resource with a status subresource) without
// its status, and with the metadata the server sets (the generic
// registry's BeforeCreate and the custom resource strategy's
// PrepareForCreate).
func admitted(obj runtime.Object) runtime.Object {
	if _, isVM := obj.(*kubevirtv1.VirtualMachine); !isVM {
		if u, ok := obj.(*unstructured.Unstructured); !ok || u.GetKind() != "VirtualMachine" {
			return obj
		}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	u.SetUID("uid-created")
	u.SetCreationTimestamp(metav1.Now())
	u.SetGeneration(1)
	u.SetDeletionTimestamp(nil)
	u.SetDeletionGracePeriodSeconds(nil)
	return u
}

// del is a delete of obj with the options an agent deletes its VM or VMI
// with (contract.VMDeleteOptions, VMIDeleteOptions), on condition of
// obj's UID, which it is given where it has none.
func del(obj runtime.Object) request {
	obj = obj.DeepCopyObject()
	m := obj.(metav1.Object)
	if m.GetUID() == "" {
		m.SetUID("uid-" + types.UID(m.GetName()))
	}
	opts := contract.VMIDeleteOptions(m.GetUID())
	if _, isVM := obj.(*kubevirtv1.VirtualMachine); isVM {
		opts = contract.VMDeleteOptions(m.GetUID())
	}
	return request{op: admission.Delete, oldObject: obj, options: &opts}
}

// with is r with its delete's options as change makes them.
func (r request) with(change func(*metav1.DeleteOptions)) request {
	opts := r.options.DeepCopy()
	change(opts)
	r.options = opts
	return r
}
func update(obj runtime.Object) request {
	return request{op: admission.Update, object: obj, oldObject: obj.DeepCopyObject()}
}

func (r request) as(tok token) request { r.token = tok; return r }

// operationOptions are the request's options as the API server hands them
// to admission, or nil.
func (r request) operationOptions() runtime.Object {
	if r.options == nil {
		return nil
	}
	opts := r.options.DeepCopy()
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
	return opts
}

// target is the object the request is about.
func (r request) target() metav1.Object {
	obj := r.object
	if obj == nil {
		obj = r.oldObject
	}
	return obj.(metav1.Object)
}

// kind is the kind of the object the request is about.
func (r request) kind() schema.GroupVersionKind {
	obj := r.object
	if obj == nil {
		obj = r.oldObject
	}
	return obj.GetObjectKind().GroupVersionKind()
}

func (r request) resource() string {
	switch r.target().(type) {
	case *kubevirtv1.VirtualMachineInstance:
		return virtualMachineInstances
	case *corev1.Pod, *policyv1.Eviction:
		return "pods"
	case *corev1.Event:
		return "events"
	}
	return virtualMachines
}

// gvr is the request's resource, without its subresource.
func (r request) gvr() schema.GroupVersionResource {
	if r.resource() == "pods" || r.resource() == "events" {
		return corev1.SchemeGroupVersion.WithResource(r.resource())
	}
	return kubevirtv1.SchemeGroupVersion.WithResource(r.resource())
}

// user is who the API server says made a request with tok.
func (f *fleet) user(tok token) user.Info {
	agent := &user.DefaultInfo{Name: "system:serviceaccount:" + f.p.Namespace + ":" + f.p.Name, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	pod := f.pod
	switch tok {
	case personToken:
		return &user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}
	case impersonated:
		return agent
	case noPodToken:
		agent.Extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=7f3c1b2e-5d4a-4e8b-9c6f-0a1b2c3d4e5f"}}
		return agent
	case noUIDToken:
		agent.Extra = map[string][]string{podNameExtra: {pod.Name}}
		return agent
	case otherPodToken:
		pod = f.other
	}
	agent.Extra = map[string][]string{podNameExtra: {pod.Name}, podUIDExtra: {string(pod.UID)}, nodeNameExtra: {pod.Node}}
	return agent
}

// compile compiles policy as kube-apiserver's ValidatingAdmissionPolicy
// plugin does (k8s.io/apiserver's validating.compilePolicy), and fails on
// any expression that does not compile. It allows only the CEL that
// Kubernetes 1.30, the first to serve admissionregistration.k8s.io/v1
// policies as the scaffold writes them, accepts in a new policy.
func compile(t testing.TB, policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	decls := admissioncel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, err := admissioncel.NewCompositedCompiler(environment.MustBaseEnvSet(version.MajorMinor(1, 30)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, v := range policy.Spec.Variables {
		// The API server's validation of a policy wants unique CEL
		// identifiers, which reserved words such as namespace are not.
		if ident, ok := apiservercel.Escape(v.Name); !ok || ident != v.Name || names[v.Name] {
			t.Fatalf("%s: variable %q: not a unique CEL identifier", policy.Name, v.Name)
		}
		names[v.Name] = true
		if res := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, decls, environment.NewExpressions); res.Error != nil {
			t.Fatalf("%s: variable %s: %v", policy.Name, v.Name, res.Error)
		}
	}
	condition := func(exprs []admissioncel.ExpressionAccessor, decls admissioncel.OptionalVariableDeclarations) admissioncel.ConditionEvaluator {
		c := compiler.CompileCondition(exprs, decls, environment.NewExpressions)
		if errs := c.CompilationErrors(); len(errs) > 0 {
			t.Fatalf("%s: %v", policy.Name, errs)
		}
		return c
	}
	var match, validations, messages []admissioncel.ExpressionAccessor
	for i := range policy.Spec.MatchConditions {
		match = append(match, (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]))
	}
	for _, v := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		var message admissioncel.ExpressionAccessor
		if v.MessageExpression != "" {
			message = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
		messages = append(messages, message)
	}
	noAuthorizer := decls
	noAuthorizer.HasAuthorizer = false
	return validating.NewValidator(
		condition(validations, decls),
		matchconditions.NewMatcher(condition(match, decls), policy.Spec.FailurePolicy, "policy", "validate", policy.Name),
		condition(nil, decls),
		condition(messages, noAuthorizer),
		policy.Spec.FailurePolicy, nil)
}

// boundPolicy is a compiled policy and its binding.
type boundPolicy struct {
	policy    *admissionregistrationv1.ValidatingAdmissionPolicy
	binding   *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	validator validating.Validator
}

// policies compiles the scaffold's policies.
func (f *fleet) policies(t testing.TB) []boundPolicy {
	t.Helper()
	policies := []boundPolicy{
		{f.p.admissionPolicy(), f.p.admissionPolicyBinding(), compile(t, f.p.admissionPolicy())},
		{f.p.guardPolicy(), f.p.guardPolicyBinding(), compile(t, f.p.guardPolicy())},
		{f.p.eventPolicy(), f.p.eventPolicyBinding(), compile(t, f.p.eventPolicy())},
	}
	if f.p.hasPodPolicy() {
		policies = append(policies, boundPolicy{f.p.podPolicy(), f.p.podPolicyBinding(), compile(t, f.p.podPolicy())})
	}
	return policies
}

// policiesKey tells fleets whose policies and bindings differ apart:
// Params hold maps, and cannot be a map key.
func (f *fleet) policiesKey(t testing.TB) string {
	t.Helper()
	objs := []any{f.p.admissionPolicy(), f.p.admissionPolicyBinding(), f.p.guardPolicy(), f.p.guardPolicyBinding(), f.p.eventPolicy(), f.p.eventPolicyBinding()}
	if f.p.hasPodPolicy() {
		objs = append(objs, f.p.podPolicy(), f.p.podPolicyBinding())
	}
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// agentPod is the Pod the workload makes for pod, on its node, with the
// agent container running as the kubelet reports it.
func (f *fleet) agentPod(t testing.TB, pod derive.Pod) *corev1.Pod {
	t.Helper()
	d := find[*appsv1.Deployment](t, mustBuild(t, f.p), f.p.Namespace, f.p.Name)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
}

// launcherPod is the launcher Pod KubeVirt makes for the VM of pod's
// agent, waiting to be scheduled, as the scheduler left it.
func (f *fleet) launcherPod(pod derive.Pod) *corev1.Pod {
	vm := derive.Name(f.p.Prototype, pod.Name, pod.UID)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-" + vm + "-x7k2p", Namespace: f.p.Namespace, UID: "uid-launcher-" + pod.UID,
			Labels: map[string]string{
				kubevirtAppLabel: "virt-launcher", contract.LabelPrototype: derive.LabelValue(f.p.Prototype), contract.LabelPod: pod.Name,
				"kubevirt.io/created-by": "uid-vmi",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vm, UID: "uid-vmi"}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "quay.io/kubevirt/virt-launcher:v1.7.0"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector.",
		}}},
	}
}

// reserving is a Deployment whose agents hold room for their VMs and give
// up a node their VM cannot run on, as scaffold makes it by default.
func reserving(p *Params) {
	p.MoveAfter = DefaultMoveAfter
	p.Reservation = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1100m"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	p.LauncherPriority = ptr.To[int32](0)
}

// shrink resizes an agent's Pod to its own requests and limits.
func shrink(pod *corev1.Pod) {
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: podtemplate.OwnRequests(), Limits: podtemplate.OwnLimits()}
}

// unknownField is vm as JSON with a field this build's types do not have
// at path, as a newer KubeVirt or Kubernetes may serve.
func unknownField(t *testing.T, vm *kubevirtv1.VirtualMachine, path ...string) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vm)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj, "on", path...); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// launcherClass gives vm the launcher priority class class, as derive does
// for an agent that holds its VM's room.
func launcherClass(vm *kubevirtv1.VirtualMachine, class string) {
	vm.Spec.Template.Spec.PriorityClassName = class
	vm.Annotations[contract.AnnotationLauncherPriorityClass] = class
}

// annotationAllowClaimAdoption lets CDI make a DataVolume of an existing
// PersistentVolumeClaim of its name.
const annotationAllowClaimAdoption = "cdi.kubevirt.io/allowClaimAdoption"

// renameTemplate renames vm's i-th dataVolumeTemplate, and the volumes that
// refer to it, to name.
func renameTemplate(vm *kubevirtv1.VirtualMachine, i int, name string) {
	old := vm.Spec.DataVolumeTemplates[i].Name
	vm.Spec.DataVolumeTemplates[i].Name = name
	for _, v := range vm.Spec.Template.Spec.Volumes {
		switch {
		case v.DataVolume != nil && v.DataVolume.Name == old:
			v.DataVolume.Name = name
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == old:
			v.PersistentVolumeClaim.ClaimName = name
		case v.Ephemeral != nil && v.Ephemeral.PersistentVolumeClaim != nil && v.Ephemeral.PersistentVolumeClaim.ClaimName == old:
			v.Ephemeral.PersistentVolumeClaim.ClaimName = name
		}
	}
}

// longTemplate names the prototype's first dataVolumeTemplate so that
// derive cuts its name in the VM, where the cut ends in "-", which derive
// trims.
func longTemplate(f *fleet) {
	const name = "root-disks-with-a-name-long-enough-to-be-cut" // and "-" and the VM's name: the cut ends in "-testvm-"
	f.proto.Spec.DataVolumeTemplates[0].Name = name
	f.proto.Spec.Template.Spec.Volumes[0].DataVolume.Name = name
}

// Fleets other than a Deployment beside its prototype.
func longPrototype(p *Params) {
	p.Prototype = "a-prototype-whose-name-is-longer-than-a-label-value-and-is-cut-there"
	p.Name = "vmctl-a-prototype-whose-name-is-longer-than-a-label" // its Pods' names are cut in labels too
}
func statefulSet(p *Params) { p.Kind = KindStatefulSet }

// replicaClaim is a StatefulSet that makes the prototype's claim
// shared-data per replica.
func replicaClaim(p *Params) {
	p.Kind = KindStatefulSet
	p.ReplicaClaims = []ReplicaClaim{{Name: "shared-data", Size: resource.MustParse("1Gi"), AccessMode: corev1.ReadWriteOnce, VolumeMode: corev1.PersistentVolumeFilesystem}}
}
func prototypeElsewhere(p *Params) { p.ProtoNamespace = "protos" }

// TestAdmissionPolicies sends what an agent's token may try through
// kube-apiserver's own admission plugin, holding the scaffold's policies
// and bindings. Each case names every rule that refuses it, so a rule
// that is broken, or refuses more than it should, fails a case, and so
// does a binding that binds the wrong requests or parameter.
func TestAdmissionPolicies(t *testing.T) {
	type vm = kubevirtv1.VirtualMachine
	tests := []struct {
		name   string
		fleet  func(*Params) // nil: a Deployment beside its prototype
		try    func(t *testing.T, f *fleet) request
		refuse []string // none: allowed
	}{
		// Creating the agent's own VM, and what it may not change in it.
		{name: "create its own Pod's VM", try: func(t *testing.T, f *fleet) request { return create(f.own(t, nil)) }},
		// The revision it claims: one its workload's store holds. The
		// policy cannot read the Pod, so any the store retains will do.
		{name: "create its VM of a revision rolled out before and retained", try: func(t *testing.T, f *fleet) request {
			return create(f.earlier(t, nil))
		}},
		{name: "create its VM with the null creationTimestamp the Go types write in its template", try: func(t *testing.T, f *fleet) request {
			// KubeVirt v1.7's VM CRD keeps it; the store's prunes it.
			return withTemplateCreationTimestamp(create(f.own(t, nil)), nil)
		}},
		{name: "create its VM with a creationTimestamp in its template", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return withTemplateCreationTimestamp(create(f.own(t, nil)), "2026-01-01T00:00:00Z")
		}},
		{name: "create its VM of a revision the store lacks", refuse: []string{ruleClaim, ruleAnnotations, ruleLabels, ruleName, ruleUnlisted, ruleVolumes, ruleDNSName},
			try: func(t *testing.T, f *fleet) request {
				vm := f.earlier(t, nil)
				f.retained = nil // pruned, or never rolled out
				return create(vm)
			}},
		{name: "create its VM of the pinned revision, claiming another the store holds", refuse: []string{ruleAnnotations, ruleLabels, ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			older := f.earlier(t, nil)
			return create(f.own(t, func(vm *vm) {
				vm.Annotations[contract.AnnotationVMRevision] = older.Annotations[contract.AnnotationVMRevision]
			}))
		}},
		{name: "create its VM claiming no revision", refuse: []string{ruleClaim, ruleAnnotations, ruleLabels, ruleName, ruleUnlisted, ruleVolumes, ruleDNSName},
			try: func(t *testing.T, f *fleet) request {
				return create(f.own(t, func(vm *vm) { delete(vm.Annotations, contract.AnnotationVMRevision) }))
			}},
		// A VM's priority class: the prototype's, or the workload's
		// launcher class, which never preempts; never one that would let
		// it preempt others.
		{name: "create its own VM with the launcher priority class", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { launcherClass(vm, f.p.launcherPriorityClassName()) }))
		}},
		{name: "create its own VM with the launcher priority class, not named in its annotation", fleet: reserving, refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.PriorityClassName = f.p.launcherPriorityClassName() }))
		}},
		{name: "create its own VM naming the launcher priority class without it", fleet: reserving, refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Annotations[contract.AnnotationLauncherPriorityClass] = f.p.launcherPriorityClassName()
			}))
		}},
		{name: "create its own VM with another priority class", fleet: reserving, refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.PriorityClassName = "system-node-critical" }))
		}},
		{name: "create its own VM with a priority class, without a launcher class", refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.PriorityClassName = "vmctl-testvm-launcher.vms" }))
		}},
		{name: "create its VM with another Pod's name", refuse: []string{ruleName, ruleDNSName, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Name = derive.Name(f.p.Prototype, f.other.Name, f.other.UID) }))
		}},
		{name: "create a second VM", refuse: []string{ruleName, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Name += "-2"; vm.Spec.Template.Spec.Hostname = vm.Name }))
		}},
		{name: "create another Pod's VM", refuse: []string{ruleAnnotations, ruleIdentity, ruleLabels, ruleName, ruleOwner, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.vm(t, f.other, nil))
		}},
		{name: "create its VM with another Pod's UID", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPodUID] = string(otherPodUID) }))
		}},
		{name: "create its VM without its Pod's UID", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { delete(vm.Annotations, contract.AnnotationPodUID) }))
		}},
		{name: "create its VM halted", refuse: []string{ruleRuns}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted) }))
		}},
		{name: "create its VM owned by another Pod", refuse: []string{ruleOwner}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.OwnerReferences[0].Name, vm.OwnerReferences[0].UID = f.other.Name, f.other.UID }))
		}},
		{name: "create its VM owned by an earlier Pod of its name", refuse: []string{ruleOwner}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.OwnerReferences[0].UID = otherPodUID }))
		}},
		{name: "create its VM owned by its Pod and by a ReplicaSet", refuse: []string{ruleOwner}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.OwnerReferences = append(vm.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: f.pod.Name, UID: f.pod.UID})
			}))
		}},
		{name: "create its VM owned by nothing", refuse: []string{ruleOwner}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.OwnerReferences = nil }))
		}},

		// Volumes: the prototype's, with its dataVolumeTemplates' claims
		// renamed per VM.
		{name: "create its VM with a serviceAccount volume", refuse: []string{ruleUnlisted, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				spec := &vm.Spec.Template.Spec
				spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: "stolen",
					VolumeSource: kubevirtv1.VolumeSource{ServiceAccount: &kubevirtv1.ServiceAccountVolumeSource{ServiceAccountName: "default"}}})
				spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "stolen"})
			}))
		}},
		{name: "create its VM with a serviceAccount volume in place of a disk", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[4].VolumeSource = kubevirtv1.VolumeSource{ServiceAccount: &kubevirtv1.ServiceAccountVolumeSource{ServiceAccountName: "default"}}
			}))
		}},
		{name: "create its VM with another container disk", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[4].ContainerDisk.Image = "example.com/evil:1" }))
		}},
		{name: "create its VM without a volume", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes = vm.Spec.Template.Spec.Volumes[1:] }))
		}},
		{name: "create its VM on another VM's DataVolume", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = f.vm(t, f.other, nil).Spec.Template.Spec.Volumes[0].DataVolume.Name
			}))
		}},
		{name: "create its VM with a template's dataVolume as a claim", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				v := &vm.Spec.Template.Spec.Volumes[0]
				v.VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.DataVolume.Name}}}
			}))
		}},
		{name: "create its VM with a template's claim writable", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ReadOnly = false }))
		}},
		{name: "create its VM with a template's ephemeral claim writable", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[2].Ephemeral.PersistentVolumeClaim.ReadOnly = false }))
		}},
		{name: "create its VM with the shared claim writable", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ReadOnly = false }))
		}},
		{name: "create its VM with a claim of its own", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = "secrets-of-another-app"
			}))
		}},
		// A claim a StatefulSet makes per replica: its own Pod's, never
		// another replica's, the prototype's or any other.
		{name: "create its VM on its Pod's own claim", fleet: replicaClaim, try: func(t *testing.T, f *fleet) request {
			vm := f.own(t, nil)
			if got, want := vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName, "shared-data-"+f.pod.Name; got != want {
				t.Fatalf("the VM's claim is %s, want %s", got, want)
			}
			return create(vm)
		}},
		{name: "create its VM on its Pod's own claim, writable where the prototype's volume is read-only", fleet: replicaClaim, refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ReadOnly = false }))
		}},
		{name: "create its VM on another replica's claim", fleet: replicaClaim, refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = "shared-data-" + f.other.Name
			}))
		}},
		{name: "create its VM on the prototype's claim, which the workload makes per replica", fleet: replicaClaim, refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = "shared-data" }))
		}},
		{name: "create its VM on a claim of its own name, of a workload that makes none per replica", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = "shared-data-" + f.pod.Name
			}))
		}},
		{name: "create its VM on its Pod's own claim of another prototype claim", fleet: replicaClaim, refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			// logs is a dataVolumeTemplate's, not made per replica.
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName = "logs-" + f.pod.Name }))
		}},
		{name: "create its VM with a dataVolumeTemplate changed", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.DataVolumeTemplates[1].Spec.Source.Blank = nil }))
		}},
		{name: "create its VM with a dataVolumeTemplate more", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				extra := *vm.Spec.DataVolumeTemplates[1].DeepCopy()
				extra.Name += "-2"
				vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, extra)
			}))
		}},

		{name: "create its VM with a template's dataVolume also a claim", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				v := &vm.Spec.Template.Spec.Volumes[0]
				v.PersistentVolumeClaim = &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.DataVolume.Name}}
			}))
		}},
		{name: "create its VM with a template's dataVolume also ephemeral", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				v := &vm.Spec.Template.Spec.Volumes[0]
				v.Ephemeral = &kubevirtv1.EphemeralVolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.DataVolume.Name}}
			}))
		}},
		{name: "create its VM with a template's claim also a dataVolume", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				v := &vm.Spec.Template.Spec.Volumes[1]
				v.DataVolume = &kubevirtv1.DataVolumeSource{Name: v.PersistentVolumeClaim.ClaimName}
			}))
		}},
		{name: "create its VM with a dataVolume and a template named empty", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			// As JSON can say it and Go's omitempty cannot.
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f.own(t, nil))
			if err != nil {
				t.Fatal(err)
			}
			spec := obj["spec"].(map[string]any)
			spec["dataVolumeTemplates"].([]any)[0].(map[string]any)["metadata"].(map[string]any)["name"] = ""
			spec["template"].(map[string]any)["spec"].(map[string]any)["volumes"].([]any)[0].(map[string]any)["dataVolume"].(map[string]any)["name"] = ""
			return create(&unstructured.Unstructured{Object: obj})
		}},
		{name: "create its VM with the shared claim on a template of its own", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = vm.Spec.DataVolumeTemplates[1].Name
			}))
		}},

		// dataVolumeTemplates: the prototype's, with their labels and
		// annotations, named as derive names them. KubeVirt makes a DataVolume
		// of each, and CDI, where it adopts claims, takes over an existing
		// PersistentVolumeClaim of its name.
		{name: "create its VM with a dataVolumeTemplate of another name", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { renameTemplate(vm, 0, "secrets-of-another-app") }))
		}},
		{name: "create its VM with a dataVolumeTemplate renamed to adopt a claim", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				renameTemplate(vm, 1, "secrets-of-another-app")
				vm.Spec.DataVolumeTemplates[1].Annotations = map[string]string{annotationAllowClaimAdoption: "true"}
			}))
		}},
		{name: "create its VM with another VM's dataVolumeTemplate", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { renameTemplate(vm, 0, f.vm(t, f.other, nil).Spec.DataVolumeTemplates[0].Name) }))
		}},
		{name: "create its VM with a dataVolumeTemplate's name kept", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { renameTemplate(vm, 0, f.proto.Spec.DataVolumeTemplates[0].Name) }))
		}},
		{name: "create its VM with a dataVolumeTemplate that adopts claims", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.DataVolumeTemplates[0].Annotations[annotationAllowClaimAdoption] = "true" }))
		}},
		{name: "create its VM with a dataVolumeTemplate's annotation dropped", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.DataVolumeTemplates[0].Annotations = nil }))
		}},
		{name: "create its VM with a dataVolumeTemplate labelled", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.DataVolumeTemplates[1].Labels = map[string]string{"app": "db"} }))
		}},
		{name: "create its VM with a dataVolumeTemplate's label changed", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.DataVolumeTemplates[0].Labels["app"] = "db" }))
		}},
		{name: "create its VM with a volume on another of its dataVolumeTemplates", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			// Templates logs and base differ only by name.
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Volumes[2].Ephemeral.PersistentVolumeClaim.ClaimName = vm.Spec.DataVolumeTemplates[1].Name
			}))
		}},
		{name: "create its VM with two volumes' dataVolumeTemplates swapped", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				logs, base := &vm.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName, &vm.Spec.Template.Spec.Volumes[2].Ephemeral.PersistentVolumeClaim.ClaimName
				*logs, *base = *base, *logs
			}))
		}},
		// Past 63 characters derive cuts a template's name and ends it with
		// the Pod's UID's last characters; CEL checks every character.
		{name: "create its own VM with a dataVolumeTemplate of a long name", try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			vm := f.own(t, nil)
			if name := vm.Spec.DataVolumeTemplates[0].Name; name[:len(name)-11] != "root-disks-with-a-name-long-enough-to-be-cut-testvm" {
				t.Fatalf("derive named the template %s, not cut where this case means to", name)
			}
			return create(vm)
		}},
		{name: "create its VM with a long dataVolumeTemplate name cut short", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			return create(f.own(t, func(vm *vm) {
				name := vm.Spec.DataVolumeTemplates[0].Name
				renameTemplate(vm, 0, name[:20]+name[len(name)-11:])
			}))
		}},
		{name: "create its VM with a long dataVolumeTemplate name cut without trimming", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			return create(f.own(t, func(vm *vm) {
				name := vm.Spec.DataVolumeTemplates[0].Name
				renameTemplate(vm, 0, name[:len(name)-11]+"-"+name[len(name)-11:])
			}))
		}},
		{name: "create its VM with a long dataVolumeTemplate name whose last character is another", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			return create(f.own(t, func(vm *vm) {
				name := vm.Spec.DataVolumeTemplates[0].Name
				last := "a"
				if name[len(name)-1] == 'a' {
					last = "b"
				}
				renameTemplate(vm, 0, name[:len(name)-1]+last)
			}))
		}},
		{name: "create its VM with a long dataVolumeTemplate name ending in other characters", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			return create(f.own(t, func(vm *vm) {
				name := vm.Spec.DataVolumeTemplates[0].Name
				renameTemplate(vm, 0, name[:len(name)-10]+"abcdefghij")
			}))
		}},
		{name: "create its VM with a long dataVolumeTemplate name ending in another Pod's UID", refuse: []string{ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			longTemplate(f)
			return create(f.own(t, func(vm *vm) {
				name := vm.Spec.DataVolumeTemplates[0].Name
				renameTemplate(vm, 0, name[:len(name)-10]+contract.UIDSuffix(string(otherPodUID)))
			}))
		}},

		// DNS names.
		{name: "create its VM with its Pod's hostname", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Hostname = f.pod.Name }))
		}},
		{name: "create its VM with no hostname", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Hostname = "" }))
		}},
		{name: "create its VM with another VM's hostname", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Hostname = f.vm(t, f.other, nil).Name }))
		}},
		{name: "create its VM in another subdomain", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Subdomain = "db" }))
		}},
		{name: "create its VM out of the prototype's subdomain", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			f.proto.Spec.Template.Spec.Subdomain = "web"
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Subdomain = "" }))
		}},
		{name: "a Deployment's VM in a StatefulSet's subdomain", refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Subdomain = f.p.Name }))
		}},
		{name: "create its VM labelled for a subdomain it is not in", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = "db" }))
		}},

		// What reaches beyond the guest: all as the prototype has it.
		{name: "create its VM with a host device", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "nic", DeviceName: "intel.com/sriov"}}
			}))
		}},
		{name: "create its VM with a GPU", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu", DeviceName: "nvidia.com/GA102"}}
			}))
		}},
		{name: "create its VM with a filesystem", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.Filesystems = []kubevirtv1.Filesystem{{Name: "shared", Virtiofs: &kubevirtv1.FilesystemVirtiofs{}}}
			}))
		}},
		{name: "create its VM with downward metrics", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Domain.Devices.DownwardMetrics = &kubevirtv1.DownwardMetrics{} }))
		}},
		{name: "create its VM with access credentials", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.AccessCredentials = []kubevirtv1.AccessCredential{{SSHPublicKey: &kubevirtv1.SSHPublicKeyAccessCredential{
					Source: kubevirtv1.SSHPublicKeyAccessCredentialSource{Secret: &kubevirtv1.AccessCredentialSecretSource{SecretName: "db-password"}}}}}
			}))
		}},
		{name: "create its VM on another network", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Networks = append(vm.Spec.Template.Spec.Networks,
					kubevirtv1.Network{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage-net"}}})
			}))
		}},
		{name: "create its VM with a hook sidecar", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.ObjectMeta.Annotations["hooks.kubevirt.io/hookSidecars"] = `[{"image": "example.com/evil:1"}]`
			}))
		}},
		{name: "create its VM of another instancetype", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Instancetype.Name = "u1.2xlarge" }))
		}},
		{name: "create its VM of an instancetype of another kind", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Instancetype.Kind = "VirtualMachineInstancetype" }))
		}},
		{name: "create its VM of another preference", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Preference.Name = "windows" }))
		}},
		{name: "create its VM of a preference of another kind", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Preference.Kind = "VirtualMachinePreference" }))
		}},

		// Refused by default: every field the prototype's but those derive
		// sets, each to its rule (the findings of issue 48 first).
		{name: "create its VM booting its own kernel", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Firmware.KernelBoot = &kubevirtv1.KernelBoot{
					Container: &kubevirtv1.KernelBootContainer{Image: "attacker.example/evil-kernel", KernelPath: "/boot/vmlinuz"}}
			}))
		}},
		{name: "create its VM with another app's template label", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Labels["app"] = "payments" }))
		}},
		{name: "create its VM with a template label added", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Labels["tier"] = "payments" }))
		}},
		{name: "create its VM without a template label of the prototype's", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { delete(vm.Spec.Template.ObjectMeta.Labels, "app") }))
		}},
		{name: "create its VM with another app's label", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Labels["app"] = "payments" }))
		}},
		{name: "create its VM with another Pod in its template's labels", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Labels[contract.LabelPod] = f.other.Name }))
		}},
		{name: "create its VM with another Pod in its labels", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Labels[contract.LabelPod] = f.other.Name }))
		}},
		{name: "create its VM probing a host it picks", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: kubevirtv1.Handler{HTTPGet: &corev1.HTTPGetAction{
					Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}}
			}))
		}},
		{name: "create its VM with a MAC address", refuse: []string{ruleIdentity}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:0a:0b:0c" }))
		}},
		{name: "create its VM bridged in place of masquerade", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
			}))
		}},
		{name: "create its VM tolerating all and on the control plane", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
				vm.Spec.Template.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
			}))
		}},
		{name: "create its VM with another scheduler", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.SchedulerName = "my-scheduler" }))
		}},
		{name: "create its VM never evicted", refuse: []string{ruleRuns}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyNone) }))
		}},
		{name: "create its VM running, as well as always", refuse: []string{ruleRuns}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Running = ptr.To(true) }))
		}},
		{name: "create its VM with a persistent TPM", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.TPM = &kubevirtv1.TPMDevice{Persistent: ptr.To(true)}
			}))
		}},
		{name: "create its VM with another firmware UUID", refuse: []string{ruleIdentity}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Domain.Firmware.UUID = "5d307ca9-b3ef-428c-8861-06e72d69f223" }))
		}},
		{name: "create its VM with another firmware serial", refuse: []string{ruleIdentity}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Domain.Firmware.Serial = string(otherPodUID) }))
		}},
		{name: "create its VM with its own DNS config", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}}
				vm.Spec.Template.Spec.DNSPolicy = corev1.DNSNone
			}))
		}},
		{name: "create its VM with another app's resource claim", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.ResourceClaims = []kubevirtv1.VirtualMachineInstanceResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("payments-gpu")}}
			}))
		}},
		{name: "create its VM with a finalizer", refuse: []string{ruleMetadata}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Finalizers = []string{"example.com/never"} }))
		}},
		{name: "create its VM with a generateName", refuse: []string{ruleMetadata}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.GenerateName = "web-" }))
		}},
		{name: "create its VM with a name in its template", refuse: []string{ruleMetadata}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Name = "web" }))
		}},
		{name: "create its VM with a field this build does not know", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(unknownField(t, f.own(t, nil), "spec", "template", "spec", "domain", "futureDevice"))
		}},
		{name: "create its VM with a field this build does not know in its metadata", refuse: []string{ruleMetadata}, try: func(t *testing.T, f *fleet) request {
			return create(unknownField(t, f.own(t, nil), "metadata", "futureField"))
		}},
		{name: "create its VM of another kind of object", refuse: []string{ruleMetadata}, try: func(t *testing.T, f *fleet) request {
			return create(unknownField(t, f.own(t, nil), "futureField"))
		}},
		{name: "create its VM pinned to another node", refuse: []string{ruleAnnotations, rulePin}, try: func(t *testing.T, f *fleet) request {
			return create(f.vm(t, derive.Pod{Name: f.pod.Name, Namespace: f.pod.Namespace, UID: f.pod.UID, Node: "node-2"}, nil))
		}},
		{name: "create its VM pinned to no node", refuse: []string{rulePin}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Affinity = nil }))
		}},
		{name: "create its VM with a node selector term that pins nothing", refuse: []string{rulePin}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				required := vm.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				required.NodeSelectorTerms = append(required.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpExists}}})
			}))
		}},
		{name: "create its own VM beside a prototype with node selector terms", try: func(t *testing.T, f *fleet) request {
			f.proto.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
					{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-9"}}}},
				}}}}
			return create(f.own(t, nil))
		}},
		{name: "create its VM with a node selector term of the prototype's changed", refuse: []string{rulePin}, try: func(t *testing.T, f *fleet) request {
			f.proto.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}}}}
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"arm64"}
			}))
		}},
		{name: "create its VM with a preferred node of its own", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 100,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}}}
			}))
		}},
		{name: "create its VM with the prototype's instancetype revision", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Instancetype.RevisionName = "testvm-u1.small-1" }))
		}},
		{name: "create its VM with KubeVirt's PCI topology where the prototype has none", try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = kubevirtv1.PciTopologyVersionV3
			}))
		}},
		{name: "create its VM with an older PCI topology where the prototype has none", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = kubevirtv1.PciTopologyVersionV2
			}))
		}},
		{name: "create its VM with another PCI topology than the prototype's", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			f.proto.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = kubevirtv1.PciTopologyVersionV2
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = kubevirtv1.PciTopologyVersionV3
			}))
		}},
		{name: "create its VM owned by its Pod, blocking its deletion", refuse: []string{ruleOwner}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) }))
		}},
		{name: "create its VM with the prototype's last applied configuration", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			f.proto.Annotations[corev1.LastAppliedConfigAnnotation] = "{}"
			return create(f.own(t, func(vm *vm) { vm.Annotations[corev1.LastAppliedConfigAnnotation] = "{}" }))
		}},
		{name: "create its VM of another prototype generation", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPrototypeGeneration] = "1" }))
		}},
		{name: "create its VM for another node", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationNode] = "node-2" }))
		}},
		{name: "create its VM with an annotation added", refuse: []string{ruleAnnotations}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations["kubevirt.io/immediate-data-volume-creation"] = "false" }))
		}},

		// The guard: the agent's own VM by its labels and annotations, never
		// the prototype, never an update.
		{name: "delete its own Pod's VM", try: func(t *testing.T, f *fleet) request { return del(f.own(t, nil)) }},
		{name: "update its own Pod's VM", refuse: []string{ruleNoUpdate}, try: func(t *testing.T, f *fleet) request { return update(f.own(t, nil)) }},
		{name: "delete another agent's VM", refuse: []string{ruleOwnVM}, try: func(t *testing.T, f *fleet) request { return del(f.vm(t, f.other, nil)) }},
		{name: "delete a VM vmctl did not make", refuse: []string{ruleLabelled, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return del(&kubevirtv1.VirtualMachine{TypeMeta: f.proto.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.p.Namespace}})
		}},
		{name: "delete the prototype", refuse: []string{ruleLabelled, ruleNotProto, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return del(f.proto)
		}},
		{name: "update the prototype", refuse: []string{ruleLabelled, ruleNoUpdate, ruleNotProto, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return update(f.proto)
		}},
		{name: "delete the prototype labelled as its own VM", refuse: []string{ruleNotProto}, try: func(t *testing.T, f *fleet) request {
			own := f.own(t, nil)
			proto := f.proto.DeepCopy()
			proto.Labels, proto.Annotations = own.Labels, own.Annotations
			return del(proto)
		}},
		{name: "create a VM of another prototype", refuse: []string{ruleLabelled, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			proto := f.proto.DeepCopy()
			proto.Name = "db"
			vm, err := derive.VM(proto, f.pod, derive.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return create(vm)
		}},
		{name: "delete its VM relabelled for another prototype", refuse: []string{ruleLabelled, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, func(vm *vm) { vm.Labels[contract.LabelPrototype] = "db" }))
		}},
		{name: "create its VM without the Pod label", refuse: []string{ruleLabels, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { delete(vm.Labels, contract.LabelPod) }))
		}},
		{name: "create its VM for a Pod of another namespace", refuse: []string{ruleAnnotations, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPodNamespace] = "other" }))
		}},
		{name: "create its VM for another prototype name", refuse: []string{ruleAnnotations, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPrototypeName] = "db" }))
		}},
		{name: "create its VM for a prototype in another namespace", refuse: []string{ruleAnnotations, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPrototypeNamespace] = "other" }))
		}},

		// The token: an agent's Pod's bound one.
		{name: "create its VM with a token bound to no Pod", refuse: []string{ruleAnnotations, ruleIdentity, ruleLabels, ruleName, ruleOwner, rulePin, ruleBoundPod, ruleOwnVM},
			try: func(t *testing.T, f *fleet) request { return create(f.own(t, nil)).as(noPodToken) }},
		{name: "delete its VM with a token bound to no Pod", refuse: []string{ruleBoundPod, ruleOwnVM},
			try: func(t *testing.T, f *fleet) request { return del(f.own(t, nil)).as(noPodToken) }},
		{name: "create its VM as the ServiceAccount impersonated", refuse: []string{ruleAnnotations, ruleIdentity, ruleLabels, ruleName, ruleOwner, rulePin, ruleBoundPod, ruleOwnVM},
			try: func(t *testing.T, f *fleet) request { return create(f.own(t, nil)).as(impersonated) }},
		{name: "delete its VM as the ServiceAccount impersonated", refuse: []string{ruleBoundPod, ruleOwnVM},
			try: func(t *testing.T, f *fleet) request { return del(f.own(t, nil)).as(impersonated) }},
		{name: "delete its VM with a token of a Pod with no UID", refuse: []string{ruleBoundPod},
			try: func(t *testing.T, f *fleet) request { return del(f.own(t, nil)).as(noUIDToken) }},
		{name: "create another Pod's VM with that Pod's token", try: func(t *testing.T, f *fleet) request {
			return create(f.vm(t, f.other, nil)).as(otherPodToken)
		}},
		{name: "a person deletes the prototype", try: func(t *testing.T, f *fleet) request { return del(f.proto).as(personToken) }},
		{name: "a person creates a derived VM with a host device", try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "nic", DeviceName: "intel.com/sriov"}}
			})).as(personToken)
		}},

		// VMIs: only its own, only deleted, to stop its VM for a drain.
		{name: "delete its own Pod's VMI", try: func(t *testing.T, f *fleet) request { return del(vmi(f.own(t, nil))) }},
		{name: "delete another Pod's VMI", refuse: []string{ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			return del(vmi(f.vm(t, f.other, nil)))
		}},
		{name: "delete a VMI vmctl did not make", refuse: []string{ruleLabelled, ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			return del(&kubevirtv1.VirtualMachineInstance{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.p.Namespace}})
		}},
		{name: "delete a VMI of its Pod for another prototype", refuse: []string{ruleLabelled, ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			vmi := vmi(f.own(t, nil))
			vmi.Labels = map[string]string{contract.LabelPrototype: "db", contract.LabelPod: f.pod.Name}
			return del(vmi)
		}},
		{name: "create its own VMI", refuse: []string{ruleOwnVMI}, try: func(t *testing.T, f *fleet) request { return create(vmi(f.own(t, nil))) }},
		{name: "update its own VMI", refuse: []string{ruleNoUpdate, ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			return update(vmi(f.own(t, nil)))
		}},

		// The prototype in a namespace of its own: the VM has no owner
		// there, and that namespace is RBAC's, not the policies'.
		{name: "create its own Pod's VM beside another namespace's prototype", fleet: prototypeElsewhere, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, nil))
		}},
		{name: "create its VM for a prototype beside it", fleet: prototypeElsewhere, refuse: []string{ruleAnnotations, ruleOwnVM}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationPrototypeNamespace] = f.p.Namespace }))
		}},
		{name: "delete its VM named as the prototype, beside another namespace's prototype", fleet: prototypeElsewhere, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, func(vm *vm) { vm.Name = f.p.Prototype }))
		}},
		{name: "delete the prototype in its namespace", fleet: prototypeElsewhere, try: func(t *testing.T, f *fleet) request { return del(f.proto) }},

		// A StatefulSet's VMs are named in DNS for their Pods.
		{name: "create a StatefulSet Pod's VM", fleet: statefulSet, try: func(t *testing.T, f *fleet) request { return create(f.own(t, nil)) }},
		{name: "create a StatefulSet Pod's VM in the prototype's subdomain", fleet: statefulSet, refuse: []string{ruleDNSName, ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Spec.Template.Spec.Subdomain = ""
				delete(vm.Spec.Template.ObjectMeta.Labels, contract.LabelSubdomain)
			}))
		}},
		{name: "create a StatefulSet Pod's VM with another Pod's hostname", fleet: statefulSet, refuse: []string{ruleDNSName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.Spec.Hostname = f.other.Name }))
		}},
		{name: "create a StatefulSet Pod's VM labelled for another subdomain", fleet: statefulSet, refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = "db" }))
		}},

		// Names past 63 characters are cut and ended with the Pod's UID's
		// last characters; CEL checks every character, so a token makes
		// one VM only.
		{name: "create its own VM of a long name", fleet: longPrototype, try: func(t *testing.T, f *fleet) request { return create(f.own(t, nil)) }},
		{name: "create a VM of a long name of another prototype", fleet: longPrototype, refuse: []string{ruleName, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Name = derive.Name("x"+f.p.Prototype, f.pod.Name, f.pod.UID)
				vm.Spec.Template.Spec.Hostname = vm.Name
			}))
		}},
		{name: "create a VM of a long name without the hyphen before its suffix", fleet: longPrototype, refuse: []string{ruleName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				cut := len(vm.Name) - 11
				vm.Name = vm.Name[:cut] + "x" + vm.Name[cut+1:]
				vm.Spec.Template.Spec.Hostname = vm.Name
			}))
		}},
		{name: "create a VM of a long name cut shorter than derive cuts it", fleet: longPrototype, refuse: []string{ruleName, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Name = vm.Name[:20] + vm.Name[len(vm.Name)-11:]
				vm.Spec.Template.Spec.Hostname = vm.Name
			}))
		}},
		// The second, third, ... VM of one Pod, each ending in ten
		// characters of the token's choosing.
		// Its templates' names are cut before the VM's name differs.
		{name: "create a second VM of a long name, ending in other characters", fleet: longPrototype, refuse: []string{ruleName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Name = vm.Name[:len(vm.Name)-10] + "aaaaaaaaaa"
				vm.Spec.Template.Spec.Hostname = vm.Name
			}))
		}},
		{name: "create a VM of a long name ending in another Pod's UID", fleet: longPrototype, refuse: []string{ruleName}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Name = vm.Name[:len(vm.Name)-10] + contract.UIDSuffix(string(otherPodUID))
				vm.Spec.Template.Spec.Hostname = vm.Name
			}))
		}},
		{name: "create a VM of a short name for a long one", fleet: longPrototype, refuse: []string{ruleName, ruleVolumes}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Name = "web"; vm.Spec.Template.Spec.Hostname = vm.Name }))
		}},
		{name: "delete a VMI with no Pod label, of a long prototype", fleet: longPrototype, refuse: []string{ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			vmi := vmi(f.own(t, nil))
			vmi.Labels = map[string]string{contract.LabelPrototype: derive.LabelValue(f.p.Prototype)}
			return del(vmi)
		}},
		{name: "delete another Pod's VMI, of a long prototype", fleet: longPrototype, refuse: []string{ruleOwnVMI}, try: func(t *testing.T, f *fleet) request {
			return del(vmi(f.vm(t, f.other, nil)))
		}},
		{name: "delete its own VMI, of a long prototype", fleet: longPrototype, try: func(t *testing.T, f *fleet) request {
			return del(vmi(f.own(t, nil)))
		}},

		// A delete's options are the agent's: never Orphan, which would
		// leave the VM's instance and its guest running with no VM.
		{name: "delete its own VM, orphaning its VMI", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.PropagationPolicy = ptr.To(metav1.DeletePropagationOrphan) })
		}},
		{name: "delete its own VM, orphaning its VMI the old way", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			// A client may still send the deprecated field; the API server takes it.
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.PropagationPolicy, o.OrphanDependents = nil, ptr.To(true) }) //nolint:staticcheck // SA1019: the refusal of the deprecated field is what is tried
		}},
		{name: "delete its own VM in the foreground", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.PropagationPolicy = ptr.To(metav1.DeletePropagationForeground) })
		}},
		{name: "delete its own VM with no options", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { *o = metav1.DeleteOptions{} })
		}},
		{name: "delete its own VM on condition of another UID", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.Preconditions.UID = ptr.To(types.UID("another")) })
		}},
		{name: "delete its own VM with a grace period", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.GracePeriodSeconds = ptr.To[int64](0) })
		}},
		{name: "delete its own VM as a dry run", try: func(t *testing.T, f *fleet) request {
			return del(f.own(t, nil)).with(func(o *metav1.DeleteOptions) { o.DryRun = []string{metav1.DryRunAll} })
		}},
		{name: "delete its own VMI, orphaning its launcher Pod", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(vmi(f.own(t, nil))).with(func(o *metav1.DeleteOptions) { o.PropagationPolicy = ptr.To(metav1.DeletePropagationOrphan) })
		}},
		{name: "delete its own VMI in the background", refuse: []string{ruleDelete}, try: func(t *testing.T, f *fleet) request {
			return del(vmi(f.own(t, nil))).with(func(o *metav1.DeleteOptions) { o.PropagationPolicy = ptr.To(metav1.DeletePropagationBackground) })
		}},

		// Empty values where derive writes none.
		{name: "create its own VM labelled with an empty subdomain", refuse: []string{ruleLabels}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				vm.Labels[contract.LabelSubdomain] = ""
				vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain] = ""
			}))
		}},
		{name: "create its own VM with an empty launcher priority class", fleet: reserving, refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationLauncherPriorityClass] = "" }))
		}},
		{name: "create its own VM with an empty launcher priority class, without a launcher class", refuse: []string{rulePriority}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) { vm.Annotations[contract.AnnotationLauncherPriorityClass] = "" }))
		}},
		{name: "create its own VM with an empty PCI topology", refuse: []string{ruleUnlisted}, try: func(t *testing.T, f *fleet) request {
			return create(f.own(t, func(vm *vm) {
				delete(vm.Spec.Template.ObjectMeta.Annotations, kubevirtv1.PciTopologyVersionAnnotation)
				vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = ""
			}))
		}},

		// Its own Pod: resized only down, to give back the room it held for
		// its VM.
		{name: "resize its own Pod to its own requests", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), shrink)
		}},
		{name: "resize its own Pod's CPU only", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10m")
			})
		}},
		{name: "resize its own Pod larger", fleet: reserving, refuse: []string{ruleSmaller}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Gi")
			})
		}},
		{name: "resize its own Pod's limit larger", fleet: reserving, refuse: []string{ruleSmaller}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				shrink(pod)
				pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("64")
			})
		}},
		{name: "give its own Pod a request it lacked", fleet: reserving, refuse: []string{ruleSmaller}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				pod.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			})
		}},
		{name: "give its own Pod Pod-level resources", fleet: reserving, refuse: []string{ruleSmaller}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				shrink(pod)
				pod.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}}
			})
		}},
		{name: "resize another agent's Pod", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.other), shrink)
		}},
		{name: "resize an earlier Pod of its name", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			earlier := f.pod
			earlier.UID = otherPodUID
			return resize(f.agentPod(t, earlier), shrink)
		}},
		{name: "resize its own Pod with a token bound to no Pod", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), shrink).as(noPodToken)
		}},
		// Its own Pod evicted, by UID, when its VM cannot run on its node.
		{name: "evict its own Pod by UID", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			return evict(f.pod, f.pod.UID)
		}},
		{name: "evict its own Pod's name without a UID precondition", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return evict(f.pod, "")
		}},
		{name: "evict its own Pod with no grace period", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			r := evict(f.pod, f.pod.UID)
			r.object.(*policyv1.Eviction).DeleteOptions.GracePeriodSeconds = ptr.To[int64](0)
			return r
		}},
		{name: "evict its own Pod, orphaning what it owns", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			r := evict(f.pod, f.pod.UID)
			r.object.(*policyv1.Eviction).DeleteOptions.PropagationPolicy = ptr.To(metav1.DeletePropagationOrphan)
			return r
		}},
		{name: "evict its own Pod as a dry run", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			r := evict(f.pod, f.pod.UID)
			r.object.(*policyv1.Eviction).DeleteOptions.DryRun = []string{metav1.DryRunAll}
			return r
		}},
		{name: "evict a later Pod of its name", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return evict(f.pod, otherPodUID)
		}},
		{name: "evict another agent's Pod", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return evict(f.other, f.other.UID)
		}},
		{name: "evict its own Pod with a token bound to no Pod", fleet: reserving, refuse: []string{ruleOwnPod}, try: func(t *testing.T, f *fleet) request {
			return evict(f.pod, f.pod.UID).as(noPodToken)
		}},
		// Its own VM's launcher Pod nominated to its node, and nothing
		// else of it changed, while it hands over its Pod's room.
		{name: "nominate its VM's launcher Pod to its node", fleet: reserving, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), nominateTo(f.pod.Node))
		}},
		{name: "withdraw its VM's launcher Pod's nomination", fleet: reserving, try: func(_ *testing.T, f *fleet) request {
			nominated := f.launcherPod(f.pod)
			nominated.Status.NominatedNodeName = f.pod.Node
			return setStatus(nominated, nominateTo(""))
		}},
		{name: "nominate its VM's launcher Pod to another node", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), nominateTo("node-2"))
		}},
		{name: "nominate its VM's launcher Pod and mark it ready", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			})
		}},
		{name: "nominate its VM's launcher Pod and give it an address", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.9", []corev1.PodIP{{IP: "10.0.0.9"}}
			})
		}},
		{name: "relabel its VM's launcher Pod through its status", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Labels["app"] = "web"
			})
		}},
		{name: "annotate its VM's launcher Pod through its status", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "compute"}
			})
		}},
		{name: "nominate its VM's launcher Pod and take its finalizers", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			nominated := f.launcherPod(f.pod)
			nominated.Finalizers = []string{"kubevirt.io/virt-launcher"}
			return setStatus(nominated, func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Finalizers = nil
			})
		}},
		{name: "nominate its VM's launcher Pod and set its resize status", fleet: reserving, refuse: []string{ruleNomination}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.NominatedNodeName = f.pod.Node
				p.Status.Resize = corev1.PodResizeStatusInProgress
			})
		}},
		{name: "nominate another agent's VM's launcher Pod", fleet: reserving, refuse: []string{ruleOwnLauncher}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.other), nominateTo(f.pod.Node))
		}},
		{name: "nominate its own agent Pod", fleet: reserving, refuse: []string{ruleOwnLauncher}, try: func(t *testing.T, f *fleet) request {
			return setStatus(f.agentPod(t, f.pod), nominateTo(f.pod.Node))
		}},
		{name: "nominate its VM's launcher Pod with a token bound to no Pod", fleet: reserving, refuse: []string{ruleNomination, ruleOwnLauncher}, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), nominateTo(f.pod.Node)).as(noPodToken)
		}},
		{name: "a person marks a launcher Pod ready", fleet: reserving, try: func(_ *testing.T, f *fleet) request {
			return setStatus(f.launcherPod(f.pod), func(p *corev1.Pod) {
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			}).as(personToken)
		}},
		{name: "a person resizes an agent's Pod larger", fleet: reserving, try: func(t *testing.T, f *fleet) request {
			return resize(f.agentPod(t, f.pod), func(pod *corev1.Pod) {
				pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Gi")
			}).as(personToken)
		}},
	}
	seen := map[string]bool{}
	clusters := newClusters(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.fleet)
			c := clusters.of(t, f)
			got := f.refusals(t, c, tt.try(t, f))
			if diff := cmp.Diff(slices.Sorted(slices.Values(tt.refuse)), got); diff != "" {
				t.Errorf("refused by (-want +got):\n%s", diff)
			}
		})
		for _, r := range tt.refuse {
			seen[r] = true
		}
	}
	// A rule no case expects to refuse could be broken unnoticed; the event
	// policy's have TestAgentEventsAdmitted.
	for _, r := range allRules() {
		if !seen[r] && r != ruleOwnEvent && r != ruleEventSigned && r != ruleEventAsMade {
			t.Errorf("no case is refused by %q", r)
		}
	}
}
