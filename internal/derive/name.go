package derive

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Name returns the derived VM's name for a prototype and a Pod:
// "<prototype>-<pod>", cut to a DNS label with a stable hash suffix when longer.
//
// The suffix hashes both full names, so VMs of two Pods whose names only
// differ past the cut still get different names.
func Name(prototype, pod string) string {
	name := prototype + "-" + pod
	if len(name) <= contract.MaxNameLength {
		return name
	}
	return cut(name, hash(prototype, pod))
}

// LabelValue returns s when it fits a label value (63 characters), and
// otherwise s cut with a stable hash suffix, as Name does. It is the value of
// contract.LabelPrototype and contract.LabelPod; compare label values with LabelValue(name),
// never with the raw name.
func LabelValue(s string) string {
	if len(s) <= contract.MaxNameLength {
		return s
	}
	return cut(s, hash(s))
}

// cut shortens s so that s, "-" and suffix fit contract.MaxNameLength, and
// trims what would make the result end in a character names and label
// values reject (contract.CutTrim).
func cut(s, suffix string) string {
	keep := strings.TrimRight(s[:contract.MaxNameLength-1-len(suffix)], contract.CutTrim)
	if keep == "" {
		return suffix
	}
	return keep + "-" + suffix
}

// hash returns a digest of parts in contract.HashLength characters of
// contract.HashAlphabet: short and DNS-safe. The NUL
// separator keeps ("a-b", "c") and ("a", "b-c") apart.
func hash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	enc := base32.NewEncoding(contract.HashAlphabet).WithPadding(base32.NoPadding)
	return enc.EncodeToString(h.Sum(nil))[:contract.HashLength]
}

// hostname turns a VM name into a DNS label for spec.hostname: VM names may
// hold dots, hostnames may not.
func hostname(name string) string {
	return strings.ReplaceAll(name, ".", "-")
}
