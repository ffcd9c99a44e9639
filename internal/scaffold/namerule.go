package scaffold

import (
	"fmt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// nameRule is CEL that holds when name is what derive.Name makes of full,
// "<a>-<b>" before any cut, for the requesting Pod: full itself when it
// fits, else its first contract.CutLength characters trimmed of
// contract.CutTrim, then "-" and variables.uidSuffix, the Pod's UID's
// last characters. Every character is checked: a token can make one name
// only. Lines after the first are indented by indent and then two spaces
// for each level, as the manifest shows them.
func nameRule(name, full, indent string) string {
	nl := "\n" + indent + "  "
	return fmt.Sprintf("%[1]s == (size(%[2]s) <= %[3]d ? %[2]s :"+
		nl+"%[2]s.substring(0, %[4]d).find('^.*[^%[5]s]') + '-' + variables.uidSuffix)",
		name, full, contract.MaxNameLength, contract.CutLength, contract.CutTrim)
}

// uidSuffix is CEL for contract.UIDSuffix of the requesting Pod's UID.
func uidSuffix() string {
	return fmt.Sprintf("size(variables.podUID) <= %[1]d ? variables.podUID : variables.podUID.substring(size(variables.podUID) - %[1]d)", contract.UIDSuffixLength)
}

// metaValue is CEL that reads key from the labels or annotations (field)
// of the metadata at path, or the empty string.
func metaValue(path, field, key string) string {
	return path + ".?" + field + "[" + literal(key) + "].orValue('')"
}
