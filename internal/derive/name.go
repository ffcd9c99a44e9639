package derive

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// maxLength is both a DNS label's and a label value's limit. Keeping the
	// VM name a DNS label keeps the VMI's default hostname valid too.
	maxLength = validation.DNS1123LabelMaxLength
	// hashLength base32 characters carry 50 bits: collisions among one
	// prototype's VMs are out of reach.
	hashLength = 10
)

// Name returns the derived VM's name for a prototype and a Pod:
// "<prototype>-<pod>", cut to a DNS label with a stable hash suffix when longer.
//
// The suffix hashes both full names, so VMs of two Pods whose names only
// differ past the cut still get different names.
func Name(prototype, pod string) string {
	name := prototype + "-" + pod
	if len(name) <= maxLength {
		return name
	}
	return cut(name, hash(prototype, pod))
}

// LabelValue returns s when it fits a label value (63 characters), and
// otherwise s cut with a stable hash suffix, as Name does. It is the value of
// LabelPrototype and LabelPod; compare label values with LabelValue(name),
// never with the raw name.
func LabelValue(s string) string {
	if len(s) <= maxLength {
		return s
	}
	return cut(s, hash(s))
}

// cut shortens s so that s, "-" and suffix fit maxLength, and trims what
// would make the result end in a character names and label values reject.
func cut(s, suffix string) string {
	keep := strings.TrimRight(s[:maxLength-1-len(suffix)], "-._")
	if keep == "" {
		return suffix
	}
	return keep + "-" + suffix
}

// hash returns a short, lower-case, DNS-safe digest of parts. The NUL
// separator keeps ("a-b", "c") and ("a", "b-c") apart.
func hash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil))
	return strings.ToLower(enc[:hashLength])
}

// hostname turns a VM name into a DNS label for spec.hostname: VM names may
// hold dots, hostnames may not.
func hostname(name string) string {
	return strings.ReplaceAll(name, ".", "-")
}
