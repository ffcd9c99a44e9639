package derive

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// The cut names below are pinned on purpose: the create policy checks them
// character by character (scaffold's TestNameRule), so a change to the
// rule is a change to every fleet's policy.
func TestName(t *testing.T) {
	const uid = types.UID("6fa459ea-ee8a-4ca4-894e-db77e160355e")
	for _, tc := range []struct {
		name, prototype, pod string
		uid                  types.UID
		want                 string
	}{
		{
			name:      "short names are joined",
			prototype: "fedora", pod: "web-0", uid: uid,
			want: "fedora-web-0",
		},
		{
			name:      "exactly 63 characters are kept",
			prototype: "fedora", pod: strings.Repeat("p", 56), uid: uid,
			want: "fedora-" + strings.Repeat("p", 56),
		},
		{
			name:      "64 characters are cut and ended with the UID's last 10",
			prototype: "fedora", pod: strings.Repeat("p", 57), uid: uid,
			want: "fedora-" + strings.Repeat("p", 45) + "-77e160355e",
		},
		{
			name:      "pods differing only past the cut get their own UID's",
			prototype: strings.Repeat("a", 40), pod: "web-5d8f9c7b6-x2x9k-" + strings.Repeat("c", 20), uid: "0f6c2a4e-51d3-4a8e-9b7c-3d2e1f0a9b8c",
			want: strings.Repeat("a", 40) + "-web-5d8f9c7-2e1f0a9b8c",
		},
		{
			name:      "dashes at the cut are trimmed",
			prototype: strings.Repeat("a", 50), pod: "-" + strings.Repeat("b", 20), uid: uid,
			want: strings.Repeat("a", 50) + "-77e160355e",
		},
		{
			name:      "dots at the cut are trimmed",
			prototype: strings.Repeat("a", 51) + ".", pod: strings.Repeat("b", 20), uid: uid,
			want: strings.Repeat("a", 51) + "-77e160355e",
		},
		{
			name:      "a UID shorter than the suffix is taken whole",
			prototype: "fedora", pod: strings.Repeat("p", 57), uid: "pod-1",
			want: "fedora-" + strings.Repeat("p", 45) + "-pod-1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Name(tc.prototype, tc.pod, tc.uid)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Name(%q, %q, %q) (-want +got):\n%s", tc.prototype, tc.pod, tc.uid, diff)
			}
			if len(got) > contract.MaxNameLength {
				t.Errorf("Name(%q, %q, %q) = %q is %d characters, want at most %d", tc.prototype, tc.pod, tc.uid, got, len(got), contract.MaxNameLength)
			}
		})
	}
}

// TestNamePodsOfOneName: two Pods of one name, one after the other (a
// StatefulSet's), get VMs of names of their own once names are cut.
func TestNamePodsOfOneName(t *testing.T) {
	long := strings.Repeat("x", 70)
	if a, b := Name(long, "db-0", "11111111-1111-1111-1111-111111111111"), Name(long, "db-0", "22222222-2222-2222-2222-222222222222"); a == b {
		t.Errorf("two Pods db-0 of other UIDs both get VM %q", a)
	}
}

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "short value is kept", in: "web-0", want: "web-0"},
		{name: "63 characters are kept", in: strings.Repeat("z", 63), want: strings.Repeat("z", 63)},
		{name: "64 characters are cut and hashed", in: strings.Repeat("z", 64), want: strings.Repeat("z", 52) + "-okmwkyyett"},
		{
			name: "dot at the cut is trimmed",
			in:   strings.Repeat("z", 51) + "." + strings.Repeat("z", 20),
			want: strings.Repeat("z", 51) + "-ee2nzlzji3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LabelValue(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LabelValue(%q) (-want +got):\n%s", tc.in, diff)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Errorf("LabelValue(%q) = %q is not a label value: %v", tc.in, got, errs)
			}
		})
	}
}

func TestHostname(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{in: "fedora-web-0", want: "fedora-web-0"},
		{in: "fedora.v1-web-0", want: "fedora-v1-web-0"},
	} {
		if diff := cmp.Diff(tc.want, hostname(tc.in)); diff != "" {
			t.Errorf("hostname(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// labelish maps arbitrary fuzz input onto DNS label characters, starting
// and ending with an alphanumeric, at any length a Kubernetes name may have,
// so that every execution exercises the DNS label property. It returns ""
// when nothing is left.
func labelish(s string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	b := []byte(s)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	out := strings.Trim(string(b), "-")
	if len(out) > validation.DNS1123SubdomainMaxLength {
		out = strings.TrimRight(out[:validation.DNS1123SubdomainMaxLength], "-")
	}
	return out
}

// The UIDs of the fuzzed Pods: the API server's are unique.
const (
	fuzzUID      = types.UID("6fa459ea-ee8a-4ca4-894e-db77e160355e")
	fuzzOtherUID = types.UID("0f6c2a4e-51d3-4a8e-9b7c-3d2e1f0a9b8c")
)

func FuzzName(f *testing.F) {
	f.Add("fedora", "web-0", "web-1")
	f.Add("fedora", strings.Repeat("p", 57), strings.Repeat("p", 58))
	f.Add(strings.Repeat("a", 50), "-b", "-c")
	f.Add(strings.Repeat("a", 40), "web-5d8f9c7b6-x2x9k-"+strings.Repeat("b", 20), "web-5d8f9c7b6-x2x9k-"+strings.Repeat("c", 20))
	f.Add("a", "b", "b-")
	f.Fuzz(func(t *testing.T, prototype, pod, other string) {
		// Any input: bounded length, deterministic, one name per pod.
		checkName(t, prototype, pod, other)

		// Valid names: the result is a DNS label and a label value.
		prototype, pod, other = labelish(prototype), labelish(pod), labelish(other)
		if prototype == "" || pod == "" {
			return
		}
		checkName(t, prototype, pod, other)
		got := Name(prototype, pod, fuzzUID)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Fatalf("Name(%q, %q) = %q is not a DNS label: %v", prototype, pod, got, errs)
		}
		if errs := validation.IsValidLabelValue(LabelValue(prototype)); len(errs) > 0 {
			t.Fatalf("LabelValue(%q) = %q is not a label value: %v", prototype, LabelValue(prototype), errs)
		}
	})
}

func checkName(t *testing.T, prototype, pod, other string) {
	t.Helper()
	got := Name(prototype, pod, fuzzUID)
	if len(got) > contract.MaxNameLength {
		t.Fatalf("Name(%q, %q) = %q is %d characters, want at most %d", prototype, pod, got, len(got), contract.MaxNameLength)
	}
	if again := Name(prototype, pod, fuzzUID); again != got {
		t.Fatalf("Name(%q, %q) gave %q then %q", prototype, pod, got, again)
	}
	if pod != other {
		if o := Name(prototype, other, fuzzOtherUID); o == got {
			t.Fatalf("Name(%q, %q) and Name(%q, %q) are both %q", prototype, pod, prototype, other, got)
		}
	}
	if lv := LabelValue(prototype); len(lv) > contract.MaxNameLength {
		t.Fatalf("LabelValue(%q) = %q is %d characters", prototype, lv, len(lv))
	}
}
