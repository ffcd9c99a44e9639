package contract

import "k8s.io/apimachinery/pkg/util/validation"

// The derived VM's name rule: "<prototype>-<pod>" when it fits
// MaxNameLength, else its first CutLength characters trimmed of CutTrim,
// then "-" and the Pod's UID's last UIDSuffixLength characters. A
// dataVolumeTemplate's name, "<template>-<VM>", is cut the same way. The
// suffix is the UID's, not a hash of the names, so that the create
// policy, which reads the UID from the requesting Pod's bound token and
// cannot hash, checks every character of a cut name: a token can make
// one name only, for its own Pod.
//
// A label value that does not fit (a prototype's name in LabelPrototype)
// is cut the same way but ended with HashLength characters of
// HashAlphabet, a hash of the whole value: scaffold computes it and writes
// it into the policies.
const (
	// MaxNameLength is both a DNS label's and a label value's limit. Keeping
	// the VM name a DNS label keeps the VMI's default hostname valid too.
	MaxNameLength = validation.DNS1123LabelMaxLength
	// UIDSuffixLength characters end a cut name: the last of the Pod's UID,
	// all hexadecimal digits in a UID the API server gave (a UUID), which
	// tell the Pods of one workload apart.
	UIDSuffixLength = 10
	// HashLength characters of HashAlphabet carry 50 bits: collisions among
	// the label values of one cluster are out of reach.
	HashLength = 10
	// CutLength is how much of a name too long is kept: room for "-" and
	// the suffix, which is as long whether a UID's or a hash.
	CutLength = MaxNameLength - 1 - UIDSuffixLength
	// HashAlphabet is base32's alphabet in lower case: DNS-safe.
	HashAlphabet = "abcdefghijklmnopqrstuvwxyz234567"
	// CutTrim are the characters a cut name may not end in: names and label
	// values reject them there. "-" comes first so that the set reads the
	// same inside a regular expression's brackets.
	CutTrim = "-._"
)

// UIDSuffix is what ends a cut name of the Pod of uid: its last
// UIDSuffixLength characters, or all of it when shorter.
func UIDSuffix(uid string) string {
	if len(uid) <= UIDSuffixLength {
		return uid
	}
	return uid[len(uid)-UIDSuffixLength:]
}
