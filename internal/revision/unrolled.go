package revision

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Unrolled says, of a workload whose Pods pin the VM revisions pinned of
// prototype proto, none of them now, the revision proto would pin now,
// that the prototype has changed since and what rolls the change out:
// "pins VM revision 1a2b3c4d5e of prototype vms/web; the prototype has
// changed since (now 6f7a8b9c0d): `kubectl vmctl rollout restart web`
// rolls it out". The command names namespace, the workload's, when it is
// set. status and diff say it once per workload, after its name.
func Unrolled(pinned []string, proto types.NamespacedName, now, namespace string) string {
	what := "revision"
	if len(pinned) > 1 {
		what += "s"
	}
	restart := "kubectl vmctl rollout restart " + proto.Name
	if namespace != "" {
		restart += " -n " + namespace
	}
	return fmt.Sprintf("pins VM %s %s of prototype %s; the prototype has changed since (now %s): `%s` rolls it out",
		what, strings.Join(pinned, ", "), proto, now, restart)
}
