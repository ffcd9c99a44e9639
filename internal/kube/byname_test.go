package kube

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestListsByName(t *testing.T) {
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	keys := func(ns string, n int) []types.NamespacedName {
		var out []types.NamespacedName
		for i := range n {
			out = append(out, nn(ns, fmt.Sprintf("p-%02d", i)))
		}
		return out
	}
	tests := []struct {
		name          string
		keys          []types.NamespacedName
		allNamespaces bool
		want          []types.NamespacedName
	}{
		{name: "nothing", want: nil},
		{name: "one name each, repeats and blanks dropped, sorted",
			keys: []types.NamespacedName{nn("b", "y"), nn("a", "x"), nn("b", "y"), nn("", "z"), nn("a", "")},
			want: []types.NamespacedName{nn("a", "x"), nn("b", "y")}},
		{name: "MaxByName in a namespace are still read by name",
			keys: keys("a", MaxByName), want: keys("a", MaxByName)},
		{name: "past MaxByName, the whole namespace",
			keys: append(keys("a", MaxByName+1), nn("b", "x")),
			want: []types.NamespacedName{nn("a", ""), nn("b", "x")}},
		{name: "all namespaces, past MaxByName LISTs: all namespaces at once",
			keys: append(keys("a", MaxByName), nn("b", "x")), allNamespaces: true,
			want: []types.NamespacedName{nn("", "")}},
		{name: "one namespace read: never all namespaces",
			keys: append(keys("a", MaxByName+1), keys("b", MaxByName+1)...),
			want: []types.NamespacedName{nn("a", ""), nn("b", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ListsByName(tt.keys, tt.allNamespaces)); diff != "" {
				t.Errorf("ListsByName (-want +got):\n%s", diff)
			}
		})
	}
}
