package scaffold

import (
	"fmt"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// nameRule is CEL that holds when name is what derive.Name makes of full,
// "<a>-<b>" before any cut: full itself when it fits, else its first
// contract.CutLength characters trimmed of contract.CutTrim, then "-" and
// a hash, which CEL cannot compute: there only the hash's length and
// alphabet are checked. Lines after the first are indented by indent and
// then two spaces for each level, as the manifest shows them.
func nameRule(name, full, indent string) string {
	nl := "\n" + indent + "  "
	return fmt.Sprintf("size(%[2]s) <= %[3]d ?"+
		nl+"%[1]s == %[2]s :"+
		nl+"%[1]s.matches('-%[4]s{%[5]d}$') &&"+
		nl+"  %[1]s.substring(0, size(%[1]s) - %[5]d) == %[2]s.substring(0, %[6]d).find('^.*[^%[7]s]') + '-'",
		name, full, contract.MaxNameLength, charClass(contract.HashAlphabet), contract.HashLength, contract.CutLength, contract.CutTrim)
}

// charClass is a regular expression's bracket expression that matches the
// characters of alphabet, each run of consecutive ones written as a range:
// "[a-z2-7]" for contract.HashAlphabet.
func charClass(alphabet string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(alphabet); {
		j := i
		for j+1 < len(alphabet) && alphabet[j+1] == alphabet[j]+1 {
			j++
		}
		b.WriteByte(alphabet[i])
		if j > i+1 {
			b.WriteByte('-')
		}
		if j > i {
			b.WriteByte(alphabet[j])
		}
		i = j + 1
	}
	b.WriteByte(']')
	return b.String()
}

// metaValue is CEL that reads key from the labels or annotations (field)
// of the metadata at path, or the empty string.
func metaValue(path, field, key string) string {
	return path + ".?" + field + "[" + literal(key) + "].orValue('')"
}
