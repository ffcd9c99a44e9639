package scaffold

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// richPrototype gives the fleet's prototype a value of its own in every
// field derive sets, so that each derived field differs from it.
func richPrototype(f *fleet) {
	spec := &f.proto.Spec
	spec.RunStrategy, spec.Running = nil, ptr.To(false)
	spec.Instancetype.RevisionName = "testvm-u1.small-1"
	spec.Preference.RevisionName = "testvm-fedora-1"
	spec.DataVolumeTemplates[0].Namespace = f.proto.Namespace
	f.proto.Finalizers = []string{"kubevirt.io/virtualMachineControllerFinalize"}
	f.proto.Annotations[corev1.LastAppliedConfigAnnotation] = "{}"
	tmpl := f.proto.Spec.Template
	tmpl.ObjectMeta.Name, tmpl.ObjectMeta.Namespace, tmpl.ObjectMeta.GenerateName = "testvm", f.proto.Namespace, "testvm-"
	tmpl.Spec.Subdomain = "web"
	tmpl.Spec.PriorityClassName = "batch"
	tmpl.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
	tmpl.Spec.Domain.Firmware = &kubevirtv1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223", Serial: "e4686d2c-6e8d-4335-b8fd-81bee22f4814"}
	tmpl.Spec.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:0a:0b:0c"
	tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}}}}
}

// richVM is the VM the requesting agent of a reserving fleet derives from
// the rich prototype, with the launcher priority class, as the API server
// admits it; other is the other agent's, on another node.
func richVM(t testing.TB, f *fleet) (own, other map[string]any) {
	t.Helper()
	derived := func(pod derive.Pod) map[string]any {
		opts := f.p.DeriveOptions()
		opts.LauncherPriorityClass = f.p.launcherPriorityClassName()
		return admitted(f.deriveVM(t, pod, opts)).(*unstructured.Unstructured).Object
	}
	otherPod := f.other
	otherPod.Node = "node-2"
	return derived(f.pod), derived(otherPod)
}

// TestCreatePolicyRefusesEveryChange changes, one at a time, every field of
// KubeVirt's VirtualMachine type (reflection over kubevirt.io/api, down to
// the leaves: each string, number, bool and quantity set or changed, each
// object set empty where absent and taken away where present, each list
// and map given an element, one changed and one taken away) on the VM an
// agent derives, and wants the create policy to refuse each change. What
// it proves is that the policy admits no change of a field this build's
// KubeVirt types have; a field a newer KubeVirt adds is refused by the
// policy's default (it compares with the source whole, but for the
// fields it names), so an upgrade passes here without a decision, and
// TestAdmissionPolicies' unknown-field cases hold that default. The
// fields derive sets (derive.Fields) are then set to wrong values that
// look right: the prototype's, and those another agent's VM holds; the
// policy must refuse each. Changes the API server discards before
// admission (status, the metadata it sets) are left out, and the fields
// it writes (derive.ClusterFields) may hold anything: those admitted are
// counted apart.
func TestCreatePolicyRefusesEveryChange(t *testing.T) {
	f := newFleet(t, reserving)
	richPrototype(f)
	api := newCluster(t, t, f)
	base, other := richVM(t, f)
	if got := f.refusals(t, api, request{op: "CREATE", object: &unstructured.Unstructured{Object: base}}); len(got) > 0 {
		t.Fatalf("the derived VM itself refused by %q", got)
	}

	var refusedN, admittedN, discarded int
	triedPaths := map[string]bool{}
	for _, c := range everyChange(reflect.TypeFor[kubevirtv1.VirtualMachine](), base) {
		switch c.path {
		case "metadata.namespace":
			continue // a create in another namespace, where the agents' Role grants nothing
		case "metadata":
			continue // taken away: a create without a name, which the API server refuses before admission
		}
		obj := admitted(&unstructured.Unstructured{Object: c.obj}).(*unstructured.Unstructured).Object
		if equality.Semantic.DeepEqual(withoutServerFields(obj), withoutServerFields(base)) {
			discarded++
			continue
		}
		triedPaths[c.path+" "+c.what] = true
		r := request{op: "CREATE", object: &unstructured.Unstructured{Object: obj}}
		switch {
		case len(f.refusals(t, api, r)) > 0:
			refusedN++
		case clusterWritten(c.path):
			admittedN++
		default:
			t.Errorf("%s: %s, and the create policy admits it", c.path, c.what)
		}
	}
	t.Logf("%d changes refused, %d of fields the cluster writes admitted, %d discarded by the API server", refusedN, admittedN, discarded)
	if refusedN < 500 {
		t.Errorf("only %d changes refused: the walk does not reach the leaves", refusedN)
	}
	// Objects without leaves, and a present object taken away, which a
	// walk of leaves alone never tries.
	for _, want := range objectChanges {
		if !triedPaths[want] {
			t.Errorf("%s: not tried", want)
		}
	}

	proto, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f.proto)
	if err != nil {
		t.Fatal(err)
	}
	tried := map[string]bool{}
	for _, field := range derive.Fields() {
		for _, wrong := range []struct {
			whose string
			from  map[string]any // nil: unset
		}{{"the prototype's", proto}, {"another agent's VM's", other}, {"unset", nil}} {
			for _, path := range concretePaths(base, wrong.from, field.Path) {
				obj := runtime.DeepCopyJSON(base)
				value, found := lookup(wrong.from, path)
				if wrong.from == nil && (slices.Contains(alwaysSet, field.Path) || !holds(base, path)) {
					continue
				}
				set(obj, path, value, found)
				if equality.Semantic.DeepEqual(obj, base) || equality.Semantic.DeepEqual(withoutServerFields(obj), withoutServerFields(base)) {
					continue
				}
				tried[field.Path] = true
				if refused := f.refusals(t, api, request{op: "CREATE", object: &unstructured.Unstructured{Object: obj}}); len(refused) == 0 {
					t.Errorf("%s set to %s (%v), and the create policy admits it; derive's value: %s", pathString(path), wrong.whose, value, field.Value)
				}
			}
		}
	}
	// The prototype and another agent's VM are of the same kind, in the
	// same namespace, and neither has a status; the wildcard stands for
	// what derive leaves out.
	for _, field := range derive.Fields() {
		if !tried[field.Path] && !slices.Contains([]string{"apiVersion", "kind", "metadata.namespace", "metadata.*", "status"}, field.Path) {
			t.Errorf("%s: no wrong value tried; give the rich prototype a value of its own there", field.Path)
		}
	}
}

// objectChanges are changes of objects that hold no leaf, or of a present
// object, that the walk must try: each once admitted unnoticed by a walk
// of leaves alone.
var objectChanges = []string{
	"spec.template.spec.domain.devices.interfaces[0].bridge set to an empty object",
	"spec.template.spec.domain.devices.interfaces[0].sriov set to an empty object",
	"spec.template.spec.domain.devices.interfaces[0].macvtap set to an empty object",
	"spec.template.spec.domain.devices.interfaces[0].passt set to an empty object",
	"spec.template.spec.domain.devices.interfaces[0].slirp set to an empty object",
	"spec.template.spec.domain.devices.interfaces[0].masquerade taken away",
	"spec.template.spec.domain.devices.downwardMetrics set to an empty object",
	"spec.template.spec.domain.devices.clientPassthrough set to an empty object",
	"spec.template.spec.domain.devices.rng set to an empty object",
	"spec.template.spec.domain.launchSecurity.snp set to an empty object",
	"spec.template.spec.domain.launchSecurity.tdx set to an empty object",
	"spec.template.spec.volumes[0].downwardMetrics set to an empty object",
	"spec.dataVolumeTemplates[0].spec.source.blank set to an empty object",
	"spec.dataVolumeTemplates[0].spec.source.upload set to an empty object",
}

// alwaysSet are the fields the API server fills in from the request, or
// refuses a create without, before admission.
var alwaysSet = []string{"apiVersion", "kind", "metadata.name", "metadata.namespace"}

func holds(obj any, path []any) bool { _, found := lookup(obj, path); return found }

// TestCreatePolicyNamesWhatDiffers: the refusal of a field not derive's
// names where the VM differs from the prototype.
func TestCreatePolicyNamesWhatDiffers(t *testing.T) {
	f := newFleet(t, nil)
	vm := f.own(t, func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Firmware.KernelBoot = &kubevirtv1.KernelBoot{Container: &kubevirtv1.KernelBootContainer{Image: "attacker.example/evil-kernel"}}
		vm.Spec.Template.Spec.SchedulerName = "mine"
	})
	v := newCluster(t, t, f).judge(t, f, create(vm))
	if len(v.failed) != 1 || !strings.HasSuffix(v.failed[0].message, "it differs at spec.template.spec.schedulerName, spec.template.spec.domain.firmware.kernelBoot") {
		t.Errorf("refusals %v, want one naming schedulerName and kernelBoot", v.failed)
	}
}

// change is one field of a VM changed.
type change struct {
	path, what string
	obj        map[string]any
}

// everyChange changes, each on a copy of obj, every leaf of the JSON of
// type t: set or changed, and for each list and map one element added, one
// changed, one taken away.
func everyChange(t reflect.Type, obj map[string]any) []change {
	var w walker
	w.walk(obj, t, nil, nil)
	return w.changes
}

// walker collects the changes of everyChange.
type walker struct{ changes []change }

// walk changes what of type t is at path in root, where the objects and
// list elements on the way exist or are made.
func (w *walker) walk(root map[string]any, t reflect.Type, path []any, seen []reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	add := func(what string, value func(old any) any) {
		c := runtime.DeepCopyJSON(root)
		old, _ := lookup(c, path)
		set(c, path, value(old), true)
		w.changes = append(w.changes, change{path: pathString(path), what: what, obj: c})
	}
	if v, ok := leafValue(t); ok {
		add("changed", v)
		return
	}
	old, _ := lookup(root, path)
	switch t.Kind() {
	case reflect.Struct:
		if slices.Contains(seen, t) { // a recursive type: its leaves were reached once
			return
		}
		for _, field := range jsonFields(t) {
			w.object(root, field, appendPath(path, field.name))
			w.walk(root, field.Type, appendPath(path, field.name), append(seen, t))
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte: base64 in JSON
			add("changed", func(any) any { return "Y2hhbmdlZA==" })
			return
		}
		add("given an element", func(old any) any { return append(slices.Clone(asList(old)), zeroJSON(t.Elem())) })
		at := root
		if len(asList(old)) > 0 {
			add("its first element taken away", func(old any) any { return asList(old)[1:] })
		} else {
			// Walking into the first element of an empty list makes one.
			at = runtime.DeepCopyJSON(root)
			set(at, path, []any{zeroJSON(t.Elem())}, true)
		}
		w.walk(at, t.Elem(), appendPath(path, 0), seen)
	case reflect.Map:
		add("given a key", func(old any) any {
			m := runtime.DeepCopyJSON(orEmpty(asMap(old)))
			m["vmctl.test/added"] = zeroJSON(t.Elem())
			return m
		})
		if keys := slices.Sorted(maps.Keys(asMap(old))); len(keys) > 0 {
			add("its key "+keys[0]+" taken away", func(old any) any {
				m := runtime.DeepCopyJSON(asMap(old))
				delete(m, keys[0])
				return m
			})
			w.walk(root, t.Elem(), appendPath(path, keys[0]), seen)
		}
	case reflect.Interface:
		add("changed", func(any) any { return "changed" })
	}
}

// object changes the object field at path itself, not only its leaves: an
// empty struct (interfaces[].bridge, rng) has none. Absent, it is set
// empty; present and optional (interfaces[].masquerade), taken away. A
// required one (no omitempty: spec, template, domain) the CRD's schema
// wants before admission.
func (w *walker) object(root map[string]any, field jsonField, path []any) {
	t := field.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, leaf := leafValue(t); leaf || t.Kind() != reflect.Struct {
		return
	}
	c := runtime.DeepCopyJSON(root)
	_, present := lookup(c, path)
	switch {
	case !present:
		set(c, path, map[string]any{}, true)
		w.changes = append(w.changes, change{path: pathString(path), what: "set to an empty object", obj: c})
	case strings.Contains(field.Tag.Get("json"), ",omitempty"):
		set(c, path, nil, false)
		w.changes = append(w.changes, change{path: pathString(path), what: "taken away", obj: c})
	}
}

// leafValue says how to change a value of t that JSON holds as one value,
// or false when t is an object or a list.
func leafValue(t reflect.Type) (func(old any) any, bool) {
	switch t {
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]():
		return func(any) any { return "2001-02-03T04:05:06Z" }, true
	case reflect.TypeFor[resource.Quantity]():
		return func(old any) any {
			if old == "7" {
				return "8"
			}
			return "7"
		}, true
	case reflect.TypeFor[intstr.IntOrString]():
		return func(old any) any {
			if old == int64(7) {
				return int64(8)
			}
			return int64(7)
		}, true
	case reflect.TypeFor[runtime.RawExtension](), reflect.TypeFor[metav1.FieldsV1]():
		return func(any) any { return map[string]any{"f:changed": map[string]any{}} }, true
	case reflect.TypeFor[metav1.Duration]():
		return func(any) any { return "1m7s" }, true
	}
	switch t.Kind() {
	case reflect.String:
		return func(old any) any {
			s, _ := old.(string)
			return s + "-changed"
		}, true
	case reflect.Bool:
		return func(old any) any { b, _ := old.(bool); return !b }, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(old any) any { n, _ := old.(int64); return n + 1 }, true
	case reflect.Float32, reflect.Float64:
		return func(old any) any { n, _ := old.(float64); return n + 1.5 }, true
	}
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(reflect.TypeFor[json.Marshaler]()) {
		panic(fmt.Sprintf("%s marshals itself: say how to change it in leafValue", t))
	}
	return nil, false
}

// zeroJSON is a new element of type t in JSON: an object for a struct, a
// string, number or bool as leafValue changes one.
func zeroJSON(t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v, ok := leafValue(t); ok {
		return v(nil)
	}
	switch t.Kind() {
	case reflect.Slice:
		return []any{}
	case reflect.Map, reflect.Struct:
		return map[string]any{}
	}
	return "added"
}

// jsonField is a field of a struct as JSON names it.
type jsonField struct {
	name string
	reflect.StructField
}

// jsonFields are t's fields as encoding/json sees them: inline and
// embedded structs' fields among t's own.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = append(out, jsonFields(ft)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f})
	}
	return out
}

// concretePaths are the paths in a or b that pattern, a derive.Field's
// path, names: each list's elements for [], each field for *.
func concretePaths(a, b map[string]any, pattern string) [][]any {
	segments := strings.Split(strings.ReplaceAll(pattern, "[]", ".[]"), ".")
	if segments[len(segments)-1] == "*" {
		return nil // what derive leaves out: the walk above changes each
	}
	var out [][]any
	var expand func(path []any, rest []string)
	expand = func(path []any, rest []string) {
		if len(rest) == 0 {
			out = append(out, path)
			return
		}
		if rest[0] != "[]" {
			expand(appendPath(path, rest[0]), rest[1:])
			return
		}
		va, _ := lookup(a, path)
		vb, _ := lookup(b, path)
		for i := range max(len(asList(va)), len(asList(vb))) {
			expand(appendPath(path, i), rest[1:])
		}
	}
	expand(nil, segments)
	return out
}

// lookup finds the value at path in obj.
func lookup(obj any, path []any) (any, bool) {
	v := obj
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			v = l[k]
		}
	}
	return v, true
}

// set puts value at path in obj, making the objects and list elements on
// the way, or removes what is there when found is false.
func set(obj map[string]any, path []any, value any, found bool) {
	var cur any = obj
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				if found {
					m[k] = value
				} else {
					delete(m, k)
				}
				return
			}
			if _, ok := m[k]; !ok {
				m[k] = emptyFor(path[i+1])
			}
			cur = m[k]
		case int:
			l := cur.([]any)
			if last {
				if found && k < len(l) {
					l[k] = value
				}
				return
			}
			cur = l[k]
		}
	}
}

func emptyFor(next any) any {
	if _, isIndex := next.(int); isIndex {
		return []any{map[string]any{}}
	}
	return map[string]any{}
}

// withoutServerFields is obj without what the API server sets on create
// whatever the request says.
func withoutServerFields(obj map[string]any) map[string]any {
	c := runtime.DeepCopyJSON(obj)
	for _, k := range []string{"uid", "creationTimestamp", "generation"} {
		unstructured.RemoveNestedField(c, "metadata", k)
	}
	return c
}

// clusterWritten reports whether path is a field the cluster writes
// (derive.ClusterFields) that may hold any value.
func clusterWritten(path string) bool {
	for _, f := range derive.ClusterFields() {
		if strings.HasPrefix(f.Value, "any") && (path == f.Path || strings.HasPrefix(path, f.Path+".") || strings.HasPrefix(path, f.Path+"[")) {
			return true
		}
	}
	return false
}

func appendPath(path []any, p any) []any { return append(slices.Clone(path), p) }

func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch k := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		}
	}
	return b.String()
}

func asList(v any) []any         { l, _ := v.([]any); return l }
func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
