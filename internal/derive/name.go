package derive

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Name returns the derived VM's name for a prototype and the Pod podName
// of UID podUID: "<prototype>-<pod>", or, when that is no DNS label, that
// cut and ended with the UID's last characters (contract's name rule).
//
// The UID tells apart the VMs of two Pods whose names differ only past the
// cut, and of two Pods of one name, one after the other (a StatefulSet's):
// each gets a VM of its own name, which the create policy checks to the
// last character.
func Name(prototype, podName string, podUID types.UID) string {
	return join(prototype, podName, podUID)
}

// join is "<a>-<b>" when it fits contract.MaxNameLength, else that cut
// with the suffix of podUID: the rule of VM names and of their
// dataVolumeTemplates' names.
func join(a, b string, podUID types.UID) string {
	name := a + "-" + b
	if len(name) <= contract.MaxNameLength {
		return name
	}
	return cut(name, contract.UIDSuffix(string(podUID)))
}

// LabelValue returns s when it fits a label value (63 characters), and
// otherwise s cut with a stable hash suffix. It is the value of
// contract.LabelPrototype; compare label values with LabelValue(name),
// never with the raw name. A Pod's name always fits (validate), so
// contract.LabelPod holds it whole.
func LabelValue(s string) string {
	if len(s) <= contract.MaxNameLength {
		return s
	}
	return cut(s, hash(s))
}

// cut keeps contract.CutLength characters of s, trimmed of what would
// make the result end in a character names and label values reject
// (contract.CutTrim), and ends them with "-" and suffix, at most
// contract.UIDSuffixLength characters: the policy checks the cut by
// its length alone, whatever the suffix's.
func cut(s, suffix string) string {
	keep := strings.TrimRight(s[:contract.CutLength], contract.CutTrim)
	if keep == "" {
		return suffix
	}
	return keep + "-" + suffix
}

// hash returns a digest of s in contract.HashLength characters of
// contract.HashAlphabet: short and DNS-safe.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	enc := base32.NewEncoding(contract.HashAlphabet).WithPadding(base32.NoPadding)
	return enc.EncodeToString(sum[:])[:contract.HashLength]
}

// hostname turns a VM name into a DNS label for spec.hostname: VM names may
// hold dots, hostnames may not.
func hostname(name string) string {
	return strings.ReplaceAll(name, ".", "-")
}
