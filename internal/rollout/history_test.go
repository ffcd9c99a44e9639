package rollout

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeep(t *testing.T) {
	tests := []struct {
		name                  string
		next, current, newest string
		past                  []Past
		limit                 int32
		want                  []string
	}{{
		name: "a first rollout keeps its revision and the one it replaces",
		next: "b", current: "a", newest: "a", limit: 10,
		want: []string{"a", "b"},
	}, {
		name: "the newest limit of the old templates stay, the older go",
		next: "e", current: "d", newest: "d", limit: 2,
		past: []Past{{Hash: "a", Number: 1}, {Hash: "b", Number: 2}, {Hash: "c", Number: 3}, {Hash: "d", Number: 4}},
		want: []string{"c", "d", "e"},
	}, {
		name: "a live old template stays beyond the limit, as its controller keeps it",
		next: "e", current: "d", newest: "d", limit: 1,
		past: []Past{{Hash: "a", Number: 1, Live: true}, {Hash: "b", Number: 2}, {Hash: "c", Number: 3}, {Hash: "d", Number: 4}},
		want: []string{"a", "d", "e"},
	}, {
		name: "limit 0 keeps no old template but the current one",
		next: "c", current: "b", newest: "b", limit: 0,
		past: []Past{{Hash: "a", Number: 1}, {Hash: "b", Number: 2}},
		want: []string{"b", "c"},
	}, {
		name: "a revision another rollout just added stays",
		next: "c", current: "a", newest: "x", limit: 0,
		want: []string{"a", "c", "x"},
	}, {
		name: "no limit set is the default, 10",
		next: "z", current: "", newest: "", limit: -1,
		past: history(12),
		want: []string{"h10", "h11", "h12", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "z"},
	}, {
		name: "templates that pin nothing name nothing",
		next: "b", current: "", newest: "", limit: 10,
		past: []Past{{Number: 1}, {Number: 2, Live: true}},
		want: []string{"b"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(Keep(tt.next, tt.current, tt.newest, tt.past, tt.limit)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Keep() (-want +got):\n%s", diff)
			}
		})
	}
}

// history is n old templates, h1 to hn, numbered as their hashes.
func history(n int) []Past {
	var out []Past
	for i := 1; i <= n; i++ {
		out = append(out, Past{Hash: fmt.Sprintf("h%d", i), Number: int64(i)})
	}
	return out
}
