package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
