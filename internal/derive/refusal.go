package derive

import (
	"fmt"

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

// PrototypeNotFound is what the agent and scaffold say of a prototype that
// does not exist.
func PrototypeNotFound(namespace, name string) string {
	return fmt.Sprintf("prototype %s/%s not found; the agents wait until it exists", namespace, name)
}
