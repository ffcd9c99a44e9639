package scaffold

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TestSpecMapsCoverTheFields: the create policy has a variable for every
// map of a VM's spec on the way down to a field derive sets or the
// cluster writes, so that it compares each such map but for that field;
// but for the maps in a list, the matchers and the template's
// annotations, which rules of their own compare.
func TestSpecMapsCoverTheFields(t *testing.T) {
	var have []string
	for i, m := range specMaps {
		if i > 0 && !slices.Contains(have, m.path[:strings.LastIndex(m.path, ".")]) {
			t.Errorf("specMaps: %s comes before its parent", m.path)
		}
		have = append(have, m.path)
	}
	ownRules := []string{"spec.instancetype", "spec.preference", "spec.template.metadata.annotations"}
	for _, f := range append(derive.Fields(), derive.ClusterFields()...) {
		path, _, _ := strings.Cut(f.Path, "[")
		if !strings.HasPrefix(path, "spec.") {
			continue
		}
		keys := strings.Split(path, ".")
		for i := 1; i < len(keys); i++ {
			parent := strings.Join(keys[:i], ".")
			if slices.Contains(ownRules, parent) {
				break
			}
			if !slices.Contains(have, parent) {
				t.Errorf("%s: specMaps lacks %s, the map on the way to it", f.Path, parent)
			}
		}
	}
}
