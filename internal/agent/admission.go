package agent

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// policyNotSetUp reports whether the API server refused a request because it
// has not yet set up the scaffold's ValidatingAdmissionPolicy, rather than
// because the policy judged the request. kube-apiserver finds a policy's
// paramKind (KubeVirt's VirtualMachine, a CRD, for a workload that pins no
// VM revision) through API discovery it
// caches for 30 s; when it starts, that cache can miss the CRD, and until
// the next refresh every request the policy matches is denied with "failed
// to configure policy: failed to find resource referenced by paramKind"
// (kubernetes/kubernetes#124237, open). Then the parameter's informer can
// still be syncing ("not yet synced to use for admission",
// kubernetes/kubernetes#141367). Retrying is the answer, not RBAC.
func policyNotSetUp(err error) bool {
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "ValidatingAdmissionPolicy") &&
		(strings.Contains(msg, "failed to find resource referenced by paramKind") ||
			strings.Contains(msg, "not yet synced to use for admission"))
}

// deniedHint is what to add to a denied write's error so its reader knows
// what to do: wait, when the API server is still setting up the admission
// policy; grant RBAC, when RBAC refused it; nothing, when the policy judged
// it (its message says why).
func deniedHint(err error, verb string) string {
	switch {
	case policyNotSetUp(err):
		return "; the API server has not yet set up the admission policy for VMs, as happens for up to 30 s after it starts " +
			"(kubernetes/kubernetes#124237); retrying"
	case apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
		return "; grant the Pod's service account " + verb
	}
	return ""
}
