package contract

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Delete timeouts of the agent (FlagDeleteTimeout).
const (
	// DefaultDeleteTimeout is the agent's --delete-timeout when its
	// arguments give none: the 180s grace period scaffold gives a Pod by
	// default, less DeleteMargin.
	DefaultDeleteTimeout = 170 * time.Second
	// DeleteMargin is how much of its Pod's grace period scaffold leaves
	// the agent unused (--delete-timeout is the rest), so the agent reports
	// a VM it could not delete before the kubelet kills it.
	DeleteMargin = 10 * time.Second
)

// Agent is what an agent Pod's arguments say about the VM it runs.
type Agent struct {
	// Prototype is the prototype VM's name: the first argument.
	Prototype string
	// PrototypeNamespace is --proto-namespace, else Namespace.
	PrototypeNamespace string
	// Namespace is where the agent makes its VM: -n/--namespace, else the
	// Pod's namespace.
	Namespace string
	// ReplicaClaims are --replica-claims: the prototype's claims whose
	// Pod's own, <claim>-<pod>, the VM uses.
	ReplicaClaims []string
}

// ParseAgent reads the arguments of pod's first container, which are
// `PROTOTYPE [flags]`: the inverse of scaffold's Params.AgentArgs. It reports false when there
// is no prototype argument. Flags other than -n/--namespace,
// --proto-namespace and --replica-claims are skipped; they must use the --flag=value form, as
// scaffold writes them.
func ParseAgent(pod *corev1.Pod) (Agent, bool) {
	a := Agent{Namespace: pod.Namespace}
	if len(pod.Spec.Containers) == 0 {
		return a, false
	}
	args := pod.Spec.Containers[0].Args
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return a, false
	}
	a.Prototype = args[0]
	for i := 1; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if v, ok := strings.CutPrefix(args[i], "--"+FlagReplicaClaims+"="); ok {
			a.ReplicaClaims = strings.Split(v, ",")
			continue
		}
		var dst *string
		switch name {
		case "-n", "--namespace":
			dst = &a.Namespace
		case "--" + FlagProtoNamespace:
			dst = &a.PrototypeNamespace
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		*dst = value
	}
	if a.PrototypeNamespace == "" {
		a.PrototypeNamespace = a.Namespace
	}
	return a, true
}

// DeleteTimeout is how long pod's agent waits for its VM to go on shutdown:
// the --delete-timeout=DURATION its first container's arguments give, as
// scaffold writes it, else DefaultDeleteTimeout. A value the agent could
// not parse counts as the default.
func DeleteTimeout(pod *corev1.Pod) time.Duration {
	d := DefaultDeleteTimeout
	if len(pod.Spec.Containers) == 0 {
		return d
	}
	for _, arg := range pod.Spec.Containers[0].Args {
		v, ok := strings.CutPrefix(arg, "--"+FlagDeleteTimeout+"=")
		if parsed, err := time.ParseDuration(v); ok && err == nil {
			d = parsed
		}
	}
	return d
}
