package contract

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// VMRevisionStoreArg is the agent's argument that names store, the
// revision store whose revision its Pod pins: what VMRevisionStore reads.
func VMRevisionStoreArg(store string) string { return "--" + FlagVMRevisions + "=" + store }

// VMRevisionStore is the revision store whose revisions the agent of a Pod
// with spec derives from: the --vm-revisions its first container's
// arguments give, as scaffold writes them, or "" where they give none (a
// Pod that pins no VM revision). The revision it pins is its
// AnnotationVMRevision.
func VMRevisionStore(spec *corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	args := spec.Containers[0].Args
	flag := "--" + FlagVMRevisions
	store := ""
	for i := 0; i < len(args); i++ {
		if v, ok := strings.CutPrefix(args[i], flag+"="); ok {
			store = v
		} else if args[i] == flag && i+1 < len(args) {
			i++
			store = args[i]
		}
	}
	return store
}
