package scaffold

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// specMap is a map of a VM's spec on the way down to a field derive sets
// or the cluster writes (derive.Fields, derive.ClusterFields), by its JSON
// path, and the name of the create policy's variable that holds it: the
// policy compares it whole with the source's but for the keys listed
// under it (differs), and judges those keys by their own rules.
type specMap struct{ path, name string }

// specMaps are those maps, each after its parent. A field derive.Fields
// lists under a map not here fails TestSpecMapsCoverTheFields. Maps in a
// list (a volume, an interface, a dataVolumeTemplate) are compared element
// by element by rules of their own; so are the instance type and
// preference matchers and the template's annotations.
var specMaps = []specMap{
	{"spec", "spec"},
	{"spec.template", "template"},
	{"spec.template.metadata", "templateMeta"},
	{"spec.template.spec", "templateSpec"},
	{"spec.template.spec.domain", "domain"},
	{"spec.template.spec.domain.firmware", "firmware"},
	{"spec.template.spec.domain.devices", "devices"},
	{"spec.template.spec.affinity", "affinity"},
	{"spec.template.spec.affinity.nodeAffinity", "nodeAffinity"},
	{"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", "required"},
}

// sourceName is the variable holding the source's map of the VM's map
// named name.
func sourceName(name string) string { return "source" + strings.ToUpper(name[:1]) + name[1:] }

// specMapVariables are a variable for each of specMaps, the VM's and the
// source's: the spec itself, and each map under its parent's, or {} where
// the parent lacks it.
func specMapVariables() []admissionregistrationv1.Variable {
	var vars []admissionregistrationv1.Variable
	names := map[string]string{}
	for _, m := range specMaps {
		names[m.path] = m.name
		vm, source := "object.spec", "variables.source.spec"
		if i := strings.LastIndex(m.path, "."); i >= 0 {
			parent, key := names[m.path[:i]], m.path[i+1:]
			vm = fmt.Sprintf("variables.%s.?%s.orValue({})", parent, key)
			source = fmt.Sprintf("variables.%s.?%s.orValue({})", sourceName(parent), key)
		}
		vars = append(vars,
			admissionregistrationv1.Variable{Name: m.name, Expression: vm},
			admissionregistrationv1.Variable{Name: sourceName(m.name), Expression: source})
	}
	return vars
}

// specMapsDiffer is CEL for the list of paths at which the VM's specMaps
// differ from the source's, but for the keys listed under each.
func specMapsDiffer() string {
	terms := make([]string, len(specMaps))
	for i, m := range specMaps {
		terms[i] = differs("variables."+m.name, "variables."+sourceName(m.name), m.path+".")
	}
	return strings.Join(terms, " +\n")
}
