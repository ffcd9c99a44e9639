package stuck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// TestStatesMatchOf: every problem Of finds in ofCases, and every wait
// OfPod finds in podCases, is a State (its Message starts with the Prefix
// of a State of its Reason; Waits for OfPod's alone), and every State but
// the agent's own (NoVM) has a case, so a new state cannot go without its
// troubleshooting row, nor without the fixture TestOfSameOnSlim needs.
func TestStatesMatchOf(t *testing.T) {
	seen := map[string]bool{}
	check := func(name string, want *Problem, waits bool) {
		if want == nil {
			return
		}
		s, ok := stateOf(*want)
		if !ok {
			t.Errorf("%s: %+v is no State: add it to States", name, *want)
			return
		}
		if s.Waits != waits {
			t.Errorf("%s: State %q has Waits %v; want %v", name, s.Prefix, s.Waits, waits)
		}
		seen[s.Prefix] = true
	}
	for _, tt := range ofCases() {
		check(tt.name, tt.want, false)
	}
	for _, tt := range podCases() {
		check(tt.name, tt.want, true)
	}
	for _, s := range States() {
		if s.NoVM && seen[s.Prefix] {
			t.Errorf("State %q is marked NoVM, but Of finds it in a VM", s.Prefix)
		}
		if !s.NoVM && !seen[s.Prefix] {
			t.Errorf("State %q has no case in ofCases or podCases: add a VM that Of, or a Pod that OfPod, finds in it", s.Prefix)
		}
		if s.Reason == "" || s.Short == "" || s.Help == "" || strings.Contains(s.Help, "\n") {
			t.Errorf("State %q wants a Reason, a Short and a one-line Help: %+v", s.Prefix, s)
		}
	}
}

func stateOf(p Problem) (State, bool) {
	for _, s := range States() {
		if s.Reason == p.Reason && (p.Message == s.Prefix || strings.HasPrefix(p.Message, s.Prefix+": ") || strings.HasPrefix(p.Message, s.Prefix+" (")) {
			return s, true
		}
	}
	return State{}, false
}

// TestOfSameOnSlim: status and gc keep VMs as kube.Slim leaves them, so Of
// must find the same in a slimmed VM as in the full one. A state that reads
// a field Slim drops fails here once it has its case (TestStatesMatchOf).
func TestOfSameOnSlim(t *testing.T) {
	for _, tt := range ofCases() {
		t.Run(tt.name, func(t *testing.T) {
			slim, err := kube.Slim(tt.vm.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			wantP, wantOK := Of(tt.vm)
			gotP, gotOK := Of(slim.(*kubevirtv1.VirtualMachine))
			if wantOK != gotOK {
				t.Fatalf("Of(slim) found a problem: %v, Of(full): %v", gotOK, wantOK)
			}
			if diff := cmp.Diff(wantP, gotP); diff != "" {
				t.Errorf("Of() of the slim VM (-full +slim):\n%s", diff)
			}
		})
	}
}

func TestReasonsAreDistinct(t *testing.T) {
	want := []string{ReasonUnschedulable, ReasonPVCNotFound, ReasonDataVolume, ReasonImagePull,
		ReasonCrashLoop, ReasonLauncherRefused, ReasonStartFailed, ReasonStopped, ReasonRevisionMissing, ReasonRevisionRewritten, ReasonNotPinned}
	if diff := cmp.Diff(want, Reasons()); diff != "" {
		t.Errorf("Reasons() (-want +got):\n%s", diff)
	}
}
