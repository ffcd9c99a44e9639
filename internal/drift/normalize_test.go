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

func TestDropDefaults(t *testing.T) {
	tests := []struct {
		name       string
		live, want any
		wantLive   any
	}{{
		name:     "live-only keys are cluster defaults",
		live:     map[string]any{"cpu": 2.0, "machine": map[string]any{"type": "q35"}},
		want:     map[string]any{"cpu": 2.0},
		wantLive: map[string]any{"cpu": 2.0},
	}, {
		name:     "changed values stay",
		live:     map[string]any{"cpu": 4.0},
		want:     map[string]any{"cpu": 2.0},
		wantLive: map[string]any{"cpu": 4.0},
	}, {
		name:     "a live-only empty map is a choice, not a default",
		live:     map[string]any{"name": "default", "bridge": map[string]any{}},
		want:     map[string]any{"name": "default", "masquerade": map[string]any{}},
		wantLive: map[string]any{"name": "default", "bridge": map[string]any{}},
	}, {
		name: "named list elements are matched by name, whatever the order and length",
		live: []any{
			map[string]any{"name": "b", "bus": "virtio", "bootOrder": 1.0},
			map[string]any{"name": "a", "bus": "sata", "serial": "x"},
			map[string]any{"name": "extra", "bus": "virtio"},
		},
		want: []any{map[string]any{"name": "a", "bus": "sata"}, map[string]any{"name": "b", "bus": "virtio"}},
		wantLive: []any{
			map[string]any{"name": "b", "bus": "virtio"},
			map[string]any{"name": "a", "bus": "sata"},
			map[string]any{"name": "extra", "bus": "virtio"},
		},
	}, {
		name:     "unnamed lists of equal length are matched by position",
		live:     []any{map[string]any{"key": "k", "operator": "In", "x": 1.0}},
		want:     []any{map[string]any{"key": "k", "operator": "In"}},
		wantLive: []any{map[string]any{"key": "k", "operator": "In"}},
	}, {
		name:     "unnamed lists of different length are left alone",
		live:     []any{map[string]any{"key": "k", "x": 1.0}, map[string]any{"key": "j"}},
		want:     []any{map[string]any{"key": "k"}},
		wantLive: []any{map[string]any{"key": "k", "x": 1.0}, map[string]any{"key": "j"}},
	}, {
		name:     "type change stays",
		live:     map[string]any{"a": "x"},
		want:     map[string]any{"a": map[string]any{"b": "x"}},
		wantLive: map[string]any{"a": "x"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantLive, dropDefaults(tt.live, tt.want)); diff != "" {
				t.Errorf("dropDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubevirtOwned(t *testing.T) {
	for key, want := range map[string]bool{
		"kubevirt.io/latest-observed-api-version": true,
		"vm.kubevirt.io/flavor":                   true,
		"vmctl.kubevirt.io/pod":                   false,
		"app":                                     false,
		"example.com/kubevirt.io":                 false,
		"notkubevirt.io/x":                        false,
	} {
		if got := kubevirtOwned(key); got != want {
			t.Errorf("kubevirtOwned(%q) = %v, want %v", key, got, want)
		}
	}
}
