package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrune(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{name: "null", in: nil, want: nil},
		{name: "empty string", in: "", want: nil},
		{name: "false and zero stay", in: map[string]any{"a": false, "b": 0.0}, want: map[string]any{"a": false, "b": 0.0}},
		{name: "empty list", in: map[string]any{"a": []any{}, "b": "x"}, want: map[string]any{"b": "x"}},
		{name: "list of nulls", in: []any{nil, ""}, want: nil},
		{name: "map of empties is dropped", in: map[string]any{"m": map[string]any{"creationTimestamp": nil}, "b": "x"}, want: map[string]any{"b": "x"}},
		{name: "empty map marker stays", in: map[string]any{"masquerade": map[string]any{}, "name": "default"},
			want: map[string]any{"masquerade": map[string]any{}, "name": "default"}},
		{name: "nested", in: map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"creationTimestamp": nil}, "spec": map[string]any{"x": 1.0}}}},
			want: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"x": 1.0}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, prune(tt.in)); diff != "" {
				t.Errorf("prune (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDropClusterFields(t *testing.T) {
	cluster := map[string]bool{"instancetype.revisionName": true, "template.metadata.annotations.kubevirt.io/pci-topology-version": true, "list[].x": true}
	tests := []struct {
		name       string
		live, want any
		wantLive   any
	}{{
		name:     "live-only keys stay: derive would not have made them",
		live:     map[string]any{"cpu": 2.0, "kernelBoot": map[string]any{"container": map[string]any{"image": "evil"}}},
		want:     map[string]any{"cpu": 2.0},
		wantLive: map[string]any{"cpu": 2.0, "kernelBoot": map[string]any{"container": map[string]any{"image": "evil"}}},
	}, {
		name:     "live-only keys the cluster writes go",
		live:     map[string]any{"instancetype": map[string]any{"name": "u1.small", "revisionName": "r-1"}},
		want:     map[string]any{"instancetype": map[string]any{"name": "u1.small"}},
		wantLive: map[string]any{"instancetype": map[string]any{"name": "u1.small"}},
	}, {
		name: "map keys with dots are matched whole",
		live: map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			"kubevirt.io/pci-topology-version": "v3", "kubevirt.io/other": "x"}}}},
		want:     map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{}}}},
		wantLive: map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kubevirt.io/other": "x"}}}},
	}, {
		name:     "a cluster field the derivation holds is compared",
		live:     map[string]any{"instancetype": map[string]any{"revisionName": "r-2"}},
		want:     map[string]any{"instancetype": map[string]any{"revisionName": "r-1"}},
		wantLive: map[string]any{"instancetype": map[string]any{"revisionName": "r-2"}},
	}, {
		name:     "changed values stay",
		live:     map[string]any{"cpu": 4.0},
		want:     map[string]any{"cpu": 2.0},
		wantLive: map[string]any{"cpu": 4.0},
	}, {
		name: "named list elements are matched by name, whatever the order and length",
		live: map[string]any{"list": []any{
			map[string]any{"name": "b", "bus": "virtio", "x": 1.0},
			map[string]any{"name": "a", "bus": "sata", "serial": "x"},
			map[string]any{"name": "extra", "bus": "virtio", "x": 1.0},
		}},
		want: map[string]any{"list": []any{map[string]any{"name": "a", "bus": "sata"}, map[string]any{"name": "b", "bus": "virtio"}}},
		wantLive: map[string]any{"list": []any{
			map[string]any{"name": "b", "bus": "virtio"},
			map[string]any{"name": "a", "bus": "sata", "serial": "x"},
			map[string]any{"name": "extra", "bus": "virtio", "x": 1.0},
		}},
	}, {
		name:     "unnamed lists of equal length are matched by position",
		live:     map[string]any{"list": []any{map[string]any{"key": "k", "x": 1.0, "y": 1.0}}},
		want:     map[string]any{"list": []any{map[string]any{"key": "k"}}},
		wantLive: map[string]any{"list": []any{map[string]any{"key": "k", "y": 1.0}}},
	}, {
		name:     "unnamed lists of different length are left alone",
		live:     map[string]any{"list": []any{map[string]any{"key": "k", "x": 1.0}, map[string]any{"key": "j"}}},
		want:     map[string]any{"list": []any{map[string]any{"key": "k"}}},
		wantLive: map[string]any{"list": []any{map[string]any{"key": "k", "x": 1.0}, map[string]any{"key": "j"}}},
	}, {
		name:     "type change stays",
		live:     map[string]any{"a": "x"},
		want:     map[string]any{"a": map[string]any{"b": "x"}},
		wantLive: map[string]any{"a": "x"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantLive, dropClusterFields(tt.live, tt.want, "", cluster)); diff != "" {
				t.Errorf("dropClusterFields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterPaths: every field the cluster writes into a VM's spec, by the
// path dropClusterFields spells.
func TestClusterPaths(t *testing.T) {
	want := map[string]bool{
		"template.metadata.annotations.kubevirt.io/pci-topology-version":     true,
		"template.metadata.annotations.kubevirt.io/pci-interface-slot-count": true,
		"instancetype.revisionName":                                          true,
		"preference.revisionName":                                            true,
	}
	if diff := cmp.Diff(want, clusterPaths()); diff != "" {
		t.Errorf("clusterPaths (-want +got):\n%s", diff)
	}
}
