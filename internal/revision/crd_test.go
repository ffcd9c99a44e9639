package revision

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// TestStoreCRDIsValid holds StoreCRD to what the API server checks of a
// CRD: a structural schema, and CEL rules that compile within the cost
// limits.
func TestStoreCRDIsValid(t *testing.T) {
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(StoreCRD(), &crd, nil); err != nil {
		t.Fatal(err)
	}
	crd.Status.StoredVersions = []string{StoreVersion} // the API server's
	if errs := validation.ValidateCustomResourceDefinition(context.Background(), &crd); len(errs) > 0 {
		t.Fatalf("the API server would refuse the CRD: %v", errs.ToAggregate())
	}
}

// TestRetainedRevisionNeverChanges evaluates the CRD's rules as the API
// server does on an update of a store: a revision may be added or pruned,
// never changed, not even one field deep in its spec.
func TestRetainedRevisionNeverChanges(t *testing.T) {
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(StoreCRD(), &crd, nil); err != nil {
		t.Fatal(err)
	}
	// Converted, the one version's schema is the CRD's.
	s, err := structuralschema.NewStructural(crd.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	v := cel.NewValidator(s, true, celconfig.PerCallLimit)
	object := func(change func(*Store)) map[string]any {
		st := NewStore("vms", "web")
		if _, err := add(st, Snapshot(prototype())); err != nil {
			t.Fatal(err)
		}
		change(st)
		u, err := st.Object()
		if err != nil {
			t.Fatal(err)
		}
		return u.Object
	}
	old := object(func(*Store) {})
	for _, tt := range []struct {
		name   string
		change func(*Store)
		ok     bool
	}{
		{"unchanged", func(*Store) {}, true},
		{"a revision added", func(st *Store) {
			p := prototype()
			p.Spec.Template.Spec.Domain.CPU.Cores = 4
			_, _ = add(st, Snapshot(p))
		}, true},
		{"the revision pruned", func(st *Store) { st.Retain(nil) }, true},
		{"its spec changed", func(st *Store) {
			for _, r := range st.Revisions {
				r.Spec.Template.Spec.Domain.CPU.Cores = 8
			}
		}, false},
		{"a field added to its spec", func(st *Store) {
			for _, r := range st.Revisions {
				r.Spec.Template.Spec.Hostname = "other"
			}
		}, false},
		{"a label changed", func(st *Store) {
			for _, r := range st.Revisions {
				r.Labels = map[string]string{"app": "other"}
			}
		}, false},
		{"a label renamed", func(st *Store) {
			for _, r := range st.Revisions {
				r.Labels = map[string]string{"other": "web"}
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := v.Validate(context.Background(), field.NewPath("root"), s, object(tt.change), old, celconfig.RuntimeCELCostBudget)
			if ok := len(errs) == 0; ok != tt.ok {
				t.Errorf("update allowed %v, want %v: %v", ok, tt.ok, errs.ToAggregate())
			}
		})
	}
}
