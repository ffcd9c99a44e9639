package derive

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// The hashed names below are pinned on purpose: agents find their VM by
// name, so a change to the scheme would orphan every existing VM.
func TestName(t *testing.T) {
	for _, tc := range []struct {
		name, prototype, pod, want string
	}{
		{
			name:      "short names are joined",
			prototype: "fedora", pod: "web-0",
			want: "fedora-web-0",
		},
		{
			name:      "exactly 63 characters are kept",
			prototype: "fedora", pod: strings.Repeat("p", 56),
			want: "fedora-" + strings.Repeat("p", 56),
		},
		{
			name:      "64 characters are cut and hashed",
			prototype: "fedora", pod: strings.Repeat("p", 57),
			want: "fedora-" + strings.Repeat("p", 45) + "-hnmwjhqu3y",
		},
		{
			name:      "pods differing only past the cut get different hashes",
			prototype: strings.Repeat("a", 40), pod: "web-5d8f9c7b6-x2x9k-" + strings.Repeat("c", 20),
			want: strings.Repeat("a", 40) + "-web-5d8f9c7-usa6ehmppx",
		},
		{
			name:      "dashes at the cut are trimmed",
			prototype: strings.Repeat("a", 50), pod: "-" + strings.Repeat("b", 20),
			want: strings.Repeat("a", 50) + "-757pqcm5zn",
		},
		{
			name:      "dots at the cut are trimmed",
			prototype: strings.Repeat("a", 51) + ".", pod: strings.Repeat("b", 20),
			want: strings.Repeat("a", 51) + "-" + hash(strings.Repeat("a", 51)+".", strings.Repeat("b", 20)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Name(tc.prototype, tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Name(%q, %q) (-want +got):\n%s", tc.prototype, tc.pod, diff)
			}
			if len(got) > contract.MaxNameLength {
				t.Errorf("Name(%q, %q) = %q is %d characters, want at most %d", tc.prototype, tc.pod, got, len(got), contract.MaxNameLength)
			}
		})
	}
}

func TestNameHashCoversBothInputs(t *testing.T) {
	// Two (prototype, pod) pairs that join to the same long string: only a
	// hash over both inputs tells them apart.
	long := strings.Repeat("x", 70)
	p1, q1, p2, q2 := "ab", "c-"+long, "ab-c", long
	if p1+"-"+q1 != p2+"-"+q2 {
		t.Fatal("test inputs must join to the same string")
	}
	if a, b := Name(p1, q1), Name(p2, q2); a == b {
		t.Errorf("Name(%q, %q) and Name(%q, %q) are both %q", p1, q1, p2, q2, a)
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
		got := Name(prototype, pod)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Fatalf("Name(%q, %q) = %q is not a DNS label: %v", prototype, pod, got, errs)
		}
		for _, s := range []string{prototype, pod} {
			if errs := validation.IsValidLabelValue(LabelValue(s)); len(errs) > 0 {
				t.Fatalf("LabelValue(%q) = %q is not a label value: %v", s, LabelValue(s), errs)
			}
		}
	})
}

func checkName(t *testing.T, prototype, pod, other string) {
	t.Helper()
	got := Name(prototype, pod)
	if len(got) > contract.MaxNameLength {
		t.Fatalf("Name(%q, %q) = %q is %d characters, want at most %d", prototype, pod, got, len(got), contract.MaxNameLength)
	}
	if again := Name(prototype, pod); again != got {
		t.Fatalf("Name(%q, %q) gave %q then %q", prototype, pod, got, again)
	}
	if pod != other {
		if o := Name(prototype, other); o == got {
			t.Fatalf("Name(%q, %q) and Name(%q, %q) are both %q", prototype, pod, prototype, other, got)
		}
	}
	if lv := LabelValue(pod); len(lv) > contract.MaxNameLength {
		t.Fatalf("LabelValue(%q) = %q is %d characters", pod, lv, len(lv))
	}
}
