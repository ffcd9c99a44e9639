// Package drift compares derived VMs with what their prototype derives to
// today, for `kubectl vmctl diff`. It compares only what the derivation
// controls: metadata labels and annotations, and spec.
package drift

import (
	"encoding/json"
	"fmt"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// ignoredAnnotations are bookkeeping, not derivation: kubectl's and
// KubeVirt's records of past writes (which derive drops from the prototype
// and KubeVirt writes into the VM, derive.ClusterFields), and the prototype
// generation, which status already reports and which changes with every
// prototype edit even when nothing a derived VM holds does.
func ignoredAnnotations() []string {
	return append(derive.DroppedAnnotations(), contract.AnnotationPrototypeGeneration, contract.AnnotationPrototypeUID)
}

// controlled returns the part of vm the derivation controls, as JSON
// values: {metadata: {labels, annotations}, spec}, with ignored annotations
// removed and empty values pruned.
func controlled(vm *kubevirtv1.VirtualMachine) (map[string]any, error) {
	annotations := map[string]string{}
	for k, v := range vm.Annotations {
		annotations[k] = v
	}
	for _, k := range ignoredAnnotations() {
		delete(annotations, k)
	}
	doc := struct {
		Metadata struct {
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec kubevirtv1.VirtualMachineSpec `json:"spec"`
	}{Spec: vm.Spec}
	doc.Metadata.Labels, doc.Metadata.Annotations = vm.Labels, annotations

	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode virtualmachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode virtualmachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	out, _ := prune(m).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// prune drops nulls, empty strings and empty lists, and maps that held only
// such values, so that absent and empty compare equal. It returns nil for a
// value to drop. A map that was empty to begin with stays: after a typed
// JSON encoding (omitempty drops empty map fields) `{}` is one of KubeVirt's
// choice markers, such as an interface's `masquerade: {}`, and dropping it
// would hide a change from masquerade to bridge.
func prune(v any) any {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if t == "" {
			return nil
		}
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			if e = prune(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		if len(t) == 0 {
			return t
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// clusterPaths are the paths, as dropClusterFields spells them, of the
// fields the cluster writes into a derived VM's spec (derive.ClusterFields):
// "a.b.c" for map keys, "[]" for a list's elements.
func clusterPaths() map[string]bool {
	out := map[string]bool{}
	for _, f := range derive.ClusterFields() {
		path, ok := strings.CutPrefix(f.Path, "spec.")
		if !ok {
			continue
		}
		path = strings.NewReplacer("[]", "[]", "[", ".", "]", "").Replace(path)
		out[path] = true
	}
	return out
}

// dropClusterFields removes from live, the spec at path, the map keys that
// want lacks and the cluster writes (clusterPaths): every other key live
// holds and want lacks stays, to be reported, for derive would not have
// made it. Lists are matched element by element: by "name" when the
// elements have one, else by position when the lengths agree.
func dropClusterFields(live, want any, path string, cluster map[string]bool) any {
	switch l := live.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			return live
		}
		out := make(map[string]any, len(l))
		for k, lv := range l {
			at := strings.TrimPrefix(path+"."+k, ".")
			wv, inWant := w[k]
			switch {
			case !inWant && cluster[at]:
			case !inWant:
				out[k] = lv
			default:
				out[k] = dropClusterFields(lv, wv, at, cluster)
			}
		}
		return out
	case []any:
		w, ok := want.([]any)
		if !ok {
			return live
		}
		out := make([]any, len(l))
		byName := named(w)
		at := path + "[]"
		for i, lv := range l {
			switch {
			case byName != nil:
				if wv, found := byName[nameOf(lv)]; found {
					lv = dropClusterFields(lv, wv, at, cluster)
				}
			case len(l) == len(w):
				lv = dropClusterFields(lv, w[i], at, cluster)
			}
			out[i] = lv
		}
		return out
	}
	return live
}

// named indexes list elements by their "name", or returns nil when not
// every element is a map with a string name.
func named(list []any) map[string]any {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]any, len(list))
	for _, e := range list {
		n := nameOf(e)
		if n == "" {
			return nil
		}
		out[n] = e
	}
	return out
}

func nameOf(v any) string {
	m, _ := v.(map[string]any)
	n, _ := m["name"].(string)
	return n
}
