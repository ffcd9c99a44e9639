package scaffold

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// everything returns Params that make every kind of object.
func everything() Params {
	p := validParams(KindStatefulSet)
	p.ProtoNamespace = "protos"
	p.Service = &ServicePort{Port: 80}
	m := intstr.FromString("50%")
	p.PDBMinAvailable = &m
	p.AdmissionPolicy = true
	return p
}

func TestWriteYAML(t *testing.T) {
	objs := mustBuild(t, everything())
	var buf bytes.Buffer
	if err := WriteYAML(&buf, objs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, unwanted := range []string{"creationTimestamp:", "status:", ": {}", ": null"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output contains %q:\n%s", unwanted, out)
		}
	}
	docs := strings.Split(out, "---\n")
	if len(docs) != len(objs) {
		t.Fatalf("got %d YAML documents, want %d", len(docs), len(objs))
	}
	var kinds []string
	for i, doc := range docs {
		var m struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if m.APIVersion == "" {
			t.Errorf("document %d (%s) has no apiVersion", i, m.Kind)
		}
		kinds = append(kinds, m.Kind)
	}
	want := []string{"ServiceAccount", "Role", "RoleBinding", "VMRevisionStore",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"Service", "StatefulSet", "Service", "PodDisruptionBudget"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	// A field set to its zero value on purpose must survive the cleaning.
	if !strings.Contains(out, "allowPrivilegeEscalation: false") {
		t.Errorf("output lost allowPrivilegeEscalation: false")
	}
}

func TestWriteJSON(t *testing.T) {
	objs := mustBuild(t, everything())
	var buf bytes.Buffer
	if err := WriteJSON(&buf, objs); err != nil {
		t.Fatal(err)
	}
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(buf.Bytes(), &list); err != nil {
		t.Fatalf("output is no JSON: %v\n%s", err, buf.String())
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != len(objs) {
		t.Errorf("got %s %s with %d items, want v1 List with %d", list.APIVersion, list.Kind, len(list.Items), len(objs))
	}
	if strings.Contains(buf.String(), `"creationTimestamp"`) || strings.Contains(buf.String(), `"status"`) {
		t.Errorf("output carries creationTimestamp or status:\n%s", buf.String())
	}
	if !strings.HasSuffix(buf.String(), "}\n") {
		t.Errorf("output does not end in a newline")
	}
}

func TestPrune(t *testing.T) {
	in := map[string]any{
		"keep":     false,
		"zero":     int64(0),
		"nil":      nil,
		"empty":    map[string]any{},
		"nested":   map[string]any{"creationTimestamp": nil, "name": "x"},
		"onlyNil":  map[string]any{"creationTimestamp": nil},
		"list":     []any{map[string]any{"a": nil, "b": "c"}},
		"emptyStr": "",
	}
	prune(in)
	want := map[string]any{
		"keep":     false,
		"zero":     int64(0),
		"nested":   map[string]any{"name": "x"},
		"list":     []any{map[string]any{"b": "c"}},
		"emptyStr": "",
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("prune (-want +got):\n%s", diff)
	}
}

// The revision store's data is printed as it is: an empty map in a VM spec
// means something (masquerade: {}), and the create policy compares it.
func TestWriteYAMLKeepsTheRevisionsEmptyMaps(t *testing.T) {
	p := validParams(KindDeployment)
	p.Snapshot = &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}},
	}}}
	p.RevisionHash = "0123456789"
	store, err := p.store()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteYAML(&out, []runtime.Object{store}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pod: {}") {
		t.Errorf("the store lost its revision's pod: {}:\n%s", out.String())
	}
}
