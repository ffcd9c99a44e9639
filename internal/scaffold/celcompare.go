package scaffold

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// The CEL the create policy compares a VM with its source by. CEL cannot
// change one field of a map it was given, nor build a map of keys it does
// not know, so where derive changes a field the comparison goes down to
// it part by part: at each map on the way, every key but the one that
// leads on holds what the source holds, and the caller judges that one.

// keyList is keys as a CEL list literal.
func keyList(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = literal(k)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// A null in a, the VM, counts as its key's absence where b, the source,
// lacks the key: the Go types write an unset creationTimestamp as null,
// which the VM's CRD keeps where it preserves unknown fields (KubeVirt
// v1.7's template metadata), and a revision store, whose CRD prunes nulls,
// lacks. A null where the source has a value differs from it.

// sameBut is CEL that holds when the maps a and b hold the same keys with
// equal values, but for except, which either may hold or lack.
func sameBut(a, b string, except ...string) string {
	if len(except) == 0 {
		return a + " == " + b
	}
	ex := keyList(except)
	return fmt.Sprintf("%[1]s.all(k, k in %[3]s || (k in %[2]s ? %[1]s[k] == %[2]s[k] : %[1]s[k] == null)) &&\n%[2]s.all(k, k in %[3]s || k in %[1]s)", a, b, ex)
}

// listed are the keys, at the object of the JSON path prefix (ending in
// "." or "[]."), of the fields derive sets or the cluster writes
// (derive.Fields, derive.ClusterFields): those the comparison leaves to
// their own rules there. Every other key is compared whole, so a field
// listed without a rule of its own would be compared by none, which
// TestCreatePolicyRefusesEveryChange catches.
func listed(prefix string) []string {
	var keys []string
	for _, f := range append(derive.Fields(), derive.ClusterFields()...) {
		rest, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		key := rest[:strings.IndexAny(rest+".", ".[")]
		if key != "" && key != "*" && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// differs is CEL for the list of paths, prefix and a key, at which the maps
// a and b at prefix differ but for the listed keys there: what the refusal
// names.
func differs(a, b, prefix string) string {
	skip := ""
	if except := listed(prefix); len(except) > 0 {
		skip = "!(k in " + keyList(except) + ") && "
	}
	return fmt.Sprintf("%[1]s.filter(k, %[4]s!(k in %[2]s ? %[1]s[k] == %[2]s[k] : %[1]s[k] == null)).map(k, '%[3]s' + string(k)) +\n"+
		"%[2]s.filter(k, %[4]s!(k in %[1]s)).map(k, '%[3]s' + string(k))", a, b, prefix, skip)
}

// unset is CEL that holds when the map m lacks every key of keys.
func unset(m string, keys ...string) string {
	return keyList(keys) + ".all(k, !(k in " + m + "))"
}

// value is CEL for m's string under key, or the empty string.
func value(m, key string) string { return m + "[?" + literal(key) + "].orValue('')" }

// exactly is CEL that holds when the map m holds want, a CEL string, under
// key, and lacks key where want is empty: derive never writes an empty
// value, so a token cannot write one in place of none. Where want is a
// literal, scaffold decides which.
func exactly(m, key, want string) string {
	switch {
	case want == "''":
		return "!(" + literal(key) + " in " + m + ")"
	case strings.HasPrefix(want, "'"):
		return value(m, key) + " == " + want
	}
	return fmt.Sprintf("(%[3]s == '' ? !(%[2]s in %[1]s) : %[1]s[?%[2]s].orValue('') == %[3]s)", m, literal(key), want)
}

// unique is CEL that holds when the list l holds no value twice.
func unique(l string) string {
	return fmt.Sprintf("%[1]s.all(n, size(%[1]s.filter(m, m == n)) == 1)", l)
}

// pairs is CEL for the list of pairs {vm, source} of the elements of the
// lists vm and source at the same index, by the source's names: the
// caller makes sure that sourceNames are unique and that vm is as long.
func pairs(vm, source, sourceNames string) string {
	at := "[" + sourceNames + ".indexOf(n)]"
	return sourceNames + ".map(n, {'vm': dyn(" + vm + at + "), 'source': dyn(" + source + at + ")})"
}

// renamedClaim is CEL that holds when the volume sources src of volume v
// and of the source's volume s (dataVolume, persistentVolumeClaim) are
// alike but for the claim each names under key, which is the source's
// renamed as derive renames a dataVolumeTemplate's claims, and where
// replica a claim the workload makes per replica (newName).
func renamedClaim(v, s, src, key string, replica bool) string {
	return fmt.Sprintf("('%[3]s' in %[1]s) == ('%[3]s' in %[2]s) && (!('%[3]s' in %[2]s) || (\n"+
		"  %[5]s &&\n"+
		"  %[6]s == %[7]s))",
		v, s, src, key,
		sameBut(v+"."+src, s+"."+src, key),
		value(v+"."+src, key), newName(value(s+"."+src, key), replica))
}

// newName is CEL for the claim a derived VM's volume names where the
// source's names claim: the VM's dataVolumeTemplate in the place of the
// source's of that name; where replica, the Pod's own claim,
// <claim>-<pod>, in the place of one the workload makes per replica
// (variables.replicaClaims, derive.ReplicaClaimName); else claim itself.
// The Pod is the one whose token asks: no agent can take another
// replica's disk.
func newName(claim string, replica bool) string {
	other := claim
	if replica {
		other = fmt.Sprintf("(%[1]s in variables.replicaClaims ? %[1]s + '-' + variables.pod : %[1]s)", claim)
	}
	return fmt.Sprintf("(%[1]s in variables.sourceTemplateNames ? variables.templateNames[variables.sourceTemplateNames.indexOf(%[1]s)] : %[2]s)", claim, other)
}
