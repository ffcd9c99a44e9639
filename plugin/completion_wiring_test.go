package plugin

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestCommandsCompleteFromCluster runs the real kubectl-vmctl root's
// completions against an API server that knows one prototype and two
// namespaces, so agent and scaffold are checked as wired, clients included.
func TestCommandsCompleteFromCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/kubevirt.io/v1/namespaces/default/virtualmachines":
			_, _ = w.Write([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineList","metadata":{},"items":[
{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"web","namespace":"default"}}]}`))
		case "/api/v1/namespaces":
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"NamespaceList","metadata":{},"items":[
{"metadata":{"name":"default"}},{"metadata":{"name":"prod"}}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "` + srv.URL + `"}}]
users: [{name: test, user: {token: test}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: default}}]
current-context: test
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)

	tests := []struct {
		args []string
		want []string
	}{
		{args: []string{"agent", ""}, want: []string{"web"}},
		{args: []string{"agent", "web", ""}, want: []string{}},
		{args: []string{"agent", "-n", ""}, want: []string{"default", "prod"}},
		{args: []string{"agent", "--proto-namespace", "p"}, want: []string{"prod"}},
		{args: []string{"scaffold", ""}, want: []string{"crd\tPrint the CustomResourceDefinition and ClusterRoles that every fleet of a cluster shares",
			"metrics-adapter\tPrint the manifests of vmctl-metrics-adapter, which serves the guests' CPU to HorizontalPodAutoscalers", "deployment", "daemonset", "statefulset"}},
		{args: []string{"scaffold", "daemonset", ""}, want: []string{"web"}},
		{args: []string{"scaffold", "daemonset", "web", ""}, want: []string{}},
		{args: []string{"scaffold", "-n", ""}, want: []string{"default", "prod"}},
		{args: []string{"scaffold", "--proto-namespace", ""}, want: []string{"default", "prod"}},
	}
	for _, tt := range tests {
		root := NewCmdVmctl(genericiooptions.NewTestIOStreamsDiscard())
		got, _ := complete(t, root, tt.args...)
		if got == nil {
			got = []string{}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("__complete %q (-want +got):\n%s", tt.args, diff)
		}
	}
}
