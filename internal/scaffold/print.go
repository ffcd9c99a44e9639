package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// clean turns obj into a map without what a new object has no business
// carrying: metadata.creationTimestamp: null (also in Pod templates), an empty
// status and empty structs such as strategy: {}. The revision store's spec
// is the VM revisions as they are: an empty map there has a meaning
// (masquerade: {}, pod: {}), and the create policy compares it.
func clean(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	delete(m, "status")
	isStore := obj.GetObjectKind().GroupVersionKind() == revision.StoreGVR.GroupVersion().WithKind(revision.StoreKind)
	spec := m["spec"]
	if isStore {
		delete(m, "spec")
	}
	prune(m)
	if isStore && spec != nil {
		m["spec"] = spec
	}
	return m, nil
}

// prune drops nil values and the empty maps that Go structs without
// omitempty leave behind, recursively. scaffold builds no object but the
// revision store (see clean) whose meaning depends on an empty map (as
// emptyDir: {} or podSelector: {} would).
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if e, ok := e.(map[string]any); ok {
					prune(e)
				}
			}
		}
	}
}

// WriteYAML writes objs as YAML documents separated by "---", ready for
// `kubectl apply -f -`.
func WriteYAML(w io.Writer, objs []runtime.Object) error {
	var buf bytes.Buffer
	for i, obj := range objs {
		m, err := clean(obj)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding %T as YAML: %w", obj, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON writes objs as one indented v1 List, ready for
// `kubectl apply -f -`.
func WriteJSON(w io.Writer, objs []runtime.Object) error {
	items := make([]any, 0, len(objs))
	for _, obj := range objs {
		m, err := clean(obj)
		if err != nil {
			return err
		}
		items = append(items, m)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	b, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding the list as JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
