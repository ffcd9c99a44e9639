package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPruneOthersKeepsOtherBuilds(t *testing.T) {
	cache := t.TempDir()
	for _, d := range []string{"node-aaaaaaaaaaaaaaaa", "node-bbbbbbbbbbbbbbbb", "kubelet", "node-components", "0123456789abcdef"} {
		if err := os.Mkdir(filepath.Join(cache, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pruneOthers(cache, "node-aaaaaaaaaaaaaaaa")
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{"0123456789abcdef", "kubelet", "node-aaaaaaaaaaaaaaaa", "node-components"}
	if !slices.Equal(got, want) {
		t.Errorf("after pruning: %v, want %v (only the other node runtime goes)", got, want)
	}
}
