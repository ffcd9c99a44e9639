package adaptercmd

import (
	"testing"
)

// TestClientThrottle: the adapter's clients allow the HPAs' rate, not
// client-go's default of 5 requests a second, and its help says so.
func TestClientThrottle(t *testing.T) {
	cmd := NewCmdMetricsAdapter()
	for name, want := range map[string]string{"client-qps": "50", "client-burst": "100"} {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("no --%s", name)
		}
		if f.Value.String() != want || f.DefValue != want {
			t.Errorf("--%s is %s (default %s), want %s", name, f.Value, f.DefValue, want)
		}
	}
	if err := cmd.Flags().Parse([]string{"--client-qps=7"}); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("client-qps").Value.String(); got != "7" {
		t.Errorf("--client-qps=7 left %s", got)
	}
}
