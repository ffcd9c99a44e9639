package derive

import (
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Refusal is the error VM would give for proto for any agent Pod in
// namespace, or nil when the agents will derive from it: what scaffold can
// tell before a Pod exists. The stand-in Pod is a StatefulSet's first, so a
// subdomain is judged as the agent judges it.
func Refusal(proto *kubevirtv1.VirtualMachine, namespace string, opts Options) error {
	pod := Pod{Name: "vmctl-0", Namespace: namespace, UID: "scaffold", Node: "node"}
	_, err := VM(proto, pod, opts)
	return err
}
