package scaffold

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestPodStatusFieldsAreKubernetes holds podStatusFields to the PodStatus
// of the Kubernetes the module builds against: a field a new release adds
// is one a nomination could change unless the pod policy names it, so it
// fails here until someone decides about it.
func TestPodStatusFieldsAreKubernetes(t *testing.T) {
	var fields []string
	typ := reflect.TypeFor[corev1.PodStatus]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Fatalf("PodStatus field %s has no JSON name", typ.Field(i).Name)
		}
		fields = append(fields, name)
	}
	want := append(slices.Clone(podStatusFields), "nominatedNodeName")
	slices.Sort(fields)
	slices.Sort(want)
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("PodStatus fields (-podStatusFields and nominatedNodeName +corev1.PodStatus):\n%s", diff)
	}
}
