package plugin

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestAgentHelp(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdVmctl(streams)
	root.SetArgs([]string{"agent", "--help"})
	if code := Execute(root, streams); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"kubectl vmctl agent PROTOTYPE", "--proto-namespace", "--hostname-override", "--allow-shared-volumes",
		`--probe-address string       Address to serve /healthz, /readyz and /metrics on. (default ":8080")`, "(default 2m50s)", "-n, --namespace"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
