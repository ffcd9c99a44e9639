package derive

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestGracePeriodTooShort(t *testing.T) {
	withGuest := func(seconds *int64) *kubevirtv1.VirtualMachine {
		p := testPrototype()
		p.Spec.Template.Spec.TerminationGracePeriodSeconds = seconds
		return p
	}
	for _, tt := range []struct {
		name    string
		proto   *kubevirtv1.VirtualMachine
		timeout time.Duration
		says    []string // empty: no warning
	}{
		{name: "KubeVirt's default guest fits the default timeout", proto: withGuest(nil), timeout: 170 * time.Second},
		{name: "guest and slack fill the timeout exactly", proto: withGuest(ptr.To[int64](40)), timeout: 50 * time.Second},
		{name: "a second too long", proto: withGuest(ptr.To[int64](41)), timeout: 50 * time.Second,
			says: []string{"gets 41s", "at most 50s", "less 10s", "may outlive its Pod", "61s or more", "--grace-period 61)"}},
		{name: "KubeVirt's default guest, a short timeout", proto: withGuest(nil), timeout: 30 * time.Second,
			says: []string{"gets 30s", "at most 30s", "--grace-period 50)"}},
		{name: "no template: KubeVirt's default guest", proto: &kubevirtv1.VirtualMachine{}, timeout: 5 * time.Second,
			says: []string{"gets 30s", "--grace-period 50)"}},
		{name: "a long guest, the default timeout", proto: withGuest(ptr.To[int64](600)), timeout: 170 * time.Second,
			says: []string{"gets 10m0s", "at most 2m50s", "--grace-period 620)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := GracePeriodTooShort(tt.proto, tt.timeout)
			if len(tt.says) == 0 && got != "" {
				t.Errorf("GracePeriodTooShort = %q, want none", got)
			}
			if len(tt.says) > 0 && got == "" {
				t.Error("GracePeriodTooShort says nothing, want a warning")
			}
			for _, s := range tt.says {
				if !strings.Contains(got, s) {
					t.Errorf("GracePeriodTooShort = %q, want it to say %q", got, s)
				}
			}
		})
	}
}

func TestEvictionStrategyOverridden(t *testing.T) {
	for _, tt := range []struct {
		asks *kubevirtv1.EvictionStrategy
		want bool
	}{
		{asks: nil},
		{asks: ptr.To(kubevirtv1.EvictionStrategyExternal)},
		{asks: ptr.To(kubevirtv1.EvictionStrategyLiveMigrate), want: true},
		{asks: ptr.To(kubevirtv1.EvictionStrategyLiveMigrateIfPossible), want: true},
		{asks: ptr.To(kubevirtv1.EvictionStrategyNone), want: true},
	} {
		p := testPrototype()
		p.Spec.Template.Spec.EvictionStrategy = tt.asks
		got := EvictionStrategyOverridden(p)
		if !tt.want {
			if got != "" {
				t.Errorf("prototype asking for %v: %q, want no warning", ptr.Deref(tt.asks, "nothing"), got)
			}
			continue
		}
		// The warning names what the prototype asks and what the VM gets:
		// what VM really sets.
		gets := *mustVM(t, p, testPod(), Options{}).Spec.Template.Spec.EvictionStrategy
		if !strings.Contains(got, "evictionStrategy "+string(*tt.asks)+",") || !strings.Contains(got, "run with "+string(gets)) {
			t.Errorf("prototype asking for %s: %q, want it to name %s and %s", *tt.asks, got, *tt.asks, gets)
		}
	}
	if got := EvictionStrategyOverridden(&kubevirtv1.VirtualMachine{}); got != "" {
		t.Errorf("prototype without template: %q, want no warning", got)
	}
}
