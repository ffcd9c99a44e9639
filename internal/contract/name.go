package contract

import "k8s.io/apimachinery/pkg/util/validation"

// The derived VM's name rule: "<prototype>-<pod>" when it fits
// MaxNameLength, else its first CutLength characters trimmed of CutTrim,
// then "-" and HashLength characters of HashAlphabet. Label values that do
// not fit are cut the same way. derive computes it; the admission policy,
// which cannot hash, checks its shape.
const (
	// MaxNameLength is both a DNS label's and a label value's limit. Keeping
	// the VM name a DNS label keeps the VMI's default hostname valid too.
	MaxNameLength = validation.DNS1123LabelMaxLength
	// HashLength characters of HashAlphabet carry 50 bits: collisions among
	// one prototype's VMs are out of reach.
	HashLength = 10
	// CutLength is how much of a name too long is kept: room for "-" and
	// the hash.
	CutLength = MaxNameLength - 1 - HashLength
	// HashAlphabet is base32's alphabet in lower case: DNS-safe.
	HashAlphabet = "abcdefghijklmnopqrstuvwxyz234567"
	// CutTrim are the characters a cut name may not end in: names and label
	// values reject them there. "-" comes first so that the set reads the
	// same inside a regular expression's brackets.
	CutTrim = "-._"
)
