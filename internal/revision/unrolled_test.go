package revision

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestUnrolled(t *testing.T) {
	proto := types.NamespacedName{Namespace: "vms", Name: "web"}
	for _, tt := range []struct {
		pinned    []string
		namespace string
		want      string
	}{{
		pinned: []string{"1a2b3c4d5e"},
		want:   "pins VM revision 1a2b3c4d5e of prototype vms/web; the prototype has changed since (now 6f7a8b9c0d): `kubectl vmctl rollout restart web` rolls it out",
	}, {
		pinned: []string{"0000000000", "1a2b3c4d5e"}, namespace: "apps",
		want: "pins VM revisions 0000000000, 1a2b3c4d5e of prototype vms/web; the prototype has changed since (now 6f7a8b9c0d): " +
			"`kubectl vmctl rollout restart web -n apps` rolls it out",
	}} {
		if got := Unrolled(tt.pinned, proto, "6f7a8b9c0d", tt.namespace); got != tt.want {
			t.Errorf("Unrolled(%v, %q) =\n%q, want\n%q", tt.pinned, tt.namespace, got, tt.want)
		}
	}
}
