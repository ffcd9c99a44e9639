package derive

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestVMSetsOnlyFields derives from a prototype that holds every field VM
// sets, and checks that every leaf of the VM that is not the prototype's is
// one of Fields, and that each of Fields is set: the create policy holds
// all other fields to the prototype's values.
func TestVMSetsOnlyFields(t *testing.T) {
	proto := loadPrototype(t, "fedora-prototype.yaml")
	proto.Spec.RunStrategy, proto.Spec.Running = nil, ptr.To(false)
	proto.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.small", RevisionName: "fedora-u1.small-1"}
	proto.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora", RevisionName: "fedora-fedora-1"}
	proto.Spec.DataVolumeTemplates[0].Namespace = "vms"
	template := proto.Spec.Template
	template.ObjectMeta.Name, template.ObjectMeta.Namespace, template.ObjectMeta.GenerateName = "fedora", "vms", "fedora-"
	template.Spec.PriorityClassName = "batch"
	template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
	template.Spec.Volumes = append(template.Spec.Volumes,
		pvcVolume("logs", "fedora-scratch", true), ephemeralVolume("base", "fedora-scratch"))
	pod := testPod()

	vm := mustVM(t, proto, pod, Options{Subdomain: "web", LauncherPriorityClass: "web-launcher.vms"})
	before, after := leaves(t, proto), leaves(t, vm)
	covered := map[string]bool{}
	for path := range union(before, after) {
		if before[path] == after[path] {
			continue
		}
		field := coveringField(path)
		if field == "" {
			t.Errorf("%s: the prototype's %s, the VM's %s, and no Field says so", path, before[path], after[path])
		}
		covered[field] = true
	}
	// A prototype read from the API server is a kubevirt.io/v1
	// VirtualMachine in the Pod's namespace already.
	unchanged := []string{"apiVersion", "kind", "metadata.namespace"}
	for _, f := range Fields() {
		if !covered[f.Path] && !slices.Contains(unchanged, f.Path) {
			t.Errorf("Field %s is listed, but VM left it as the prototype has it", f.Path)
		}
	}
}

// listIndex is a list element's index in a leaf's path.
var listIndex = regexp.MustCompile(`\[\d+\]`)

// coveringField is the path of the Field that covers the leaf at path, or "".
func coveringField(path string) string {
	path = listIndex.ReplaceAllString(path, "[]")
	var best string
	for _, f := range Fields() {
		prefix, wildcard := strings.CutSuffix(f.Path, ".*")
		switch {
		case wildcard && strings.HasPrefix(path, prefix+"."):
			if best == "" {
				best = f.Path
			}
		case path == f.Path || strings.HasPrefix(path, f.Path+".") || strings.HasPrefix(path, f.Path+"["):
			return f.Path
		}
	}
	return best
}

// leaves flattens obj's JSON into its leaves, by path: map keys after a
// dot, list elements as [i].
func leaves(t *testing.T, obj any) map[string]string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(strings.TrimPrefix(path+"."+k, "."), e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		default:
			out[path] = fmt.Sprint(v)
		}
	}
	walk("", v)
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
