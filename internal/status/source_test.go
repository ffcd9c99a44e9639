package status

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestByName(t *testing.T) {
	keys := func(ns string, n int) []types.NamespacedName {
		var out []types.NamespacedName
		for i := range n {
			out = append(out, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("p-%02d", i)})
		}
		return out
	}
	tests := []struct {
		name          string
		keys          []types.NamespacedName
		allNamespaces bool
		want          []source
	}{
		{name: "nothing", want: nil},
		{name: "one name each, repeats and blanks dropped, sorted",
			keys: []types.NamespacedName{{Namespace: "b", Name: "y"}, {Namespace: "a", Name: "x"}, {Namespace: "b", Name: "y"}, {Name: "z"}, {Namespace: "a"}},
			want: []source{{roleOwners, "a", "x"}, {roleOwners, "b", "y"}}},
		{name: "MaxByName in a namespace are still read by name",
			keys: keys("a", MaxByName), want: func() []source {
				var out []source
				for _, k := range keys("a", MaxByName) {
					out = append(out, source{roleOwners, "a", k.Name})
				}
				return out
			}()},
		{name: "past MaxByName, the whole namespace",
			keys: append(keys("a", MaxByName+1), types.NamespacedName{Namespace: "b", Name: "x"}),
			want: []source{{roleOwners, "a", ""}, {roleOwners, "b", "x"}}},
		{name: "all namespaces, past MaxByName sources: all namespaces at once",
			keys: append(keys("a", MaxByName), types.NamespacedName{Namespace: "b", Name: "x"}), allNamespaces: true,
			want: []source{{roleOwners, "", ""}}},
		{name: "one namespace shown: never all namespaces",
			keys: append(keys("a", MaxByName+1), keys("b", MaxByName+1)...),
			want: []source{{roleOwners, "a", ""}, {roleOwners, "b", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := byName(roleOwners, tt.keys, tt.allNamespaces)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(source{})); diff != "" {
				t.Errorf("byName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPending(t *testing.T) {
	have := map[source]bool{
		{roleOwners, "a", ""}:         true, // a whole namespace
		{rolePrototypes, "", ""}:      true, // all namespaces
		{roleDerived, "b", ""}:        true,
		{roleOwners, "c", "old-name"}: true,
	}
	want := []source{
		{roleOwners, "a", "x"},       // covered by namespace a
		{rolePrototypes, "z", "web"}, // covered by all namespaces
		{roleDerived, "b", ""},       // had
		{roleOwners, "c", "old-name"},
		{roleOwners, "c", "new-name"}, // new
		{roleOwners, "c", "new-name"}, // asked twice, read once
		{roleVMIs, "b", ""},           // new
	}
	got := pending(want, have)
	if diff := cmp.Diff([]source{{roleOwners, "c", "new-name"}, {roleVMIs, "b", ""}}, got, cmp.AllowUnexported(source{})); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
}
