package kube

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestFactories sends one Pod LIST and one VM LIST through each factory's
// clients, made once, and checks what the API server sees: each its own
// user agent, Pods asked for in protobuf, and KubeVirt's custom resources
// in JSON.
func TestFactories(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+strings.SplitN(r.UserAgent(), "/", 2)[0]+" "+r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"metadata":{},"items":[]}`))
	}))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+api.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: vms}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		factory func(KubeconfigLoader) Factory
		want    []string
	}{
		{name: "operator commands", factory: NewFactory, want: []string{
			"/api/v1/namespaces/vms/pods kubectl-vmctl application/vnd.kubernetes.protobuf,application/json",
			"/apis/kubevirt.io/v1/namespaces/vms/virtualmachines kubectl-vmctl application/json, */*",
		}},
		{name: "agent", factory: NewAgentFactory, want: []string{
			"/api/v1/namespaces/vms/pods kubectl-vmctl-agent application/vnd.kubernetes.protobuf,application/json",
			"/apis/kubevirt.io/v1/namespaces/vms/virtualmachines kubectl-vmctl-agent application/json, */*",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			flags := genericclioptions.NewConfigFlags(true)
			*flags.KubeConfig = kubeconfig
			f := tt.factory(flags)
			c, err := f.Clients()
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := f.Clients(); again.Kube != c.Kube || again.KubeVirt != c.KubeVirt {
				t.Error("Clients made the clientsets twice")
			}
			if _, err := c.Kube.CoreV1().Pods("vms").List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.KubeVirt.KubevirtV1().VirtualMachines("vms").List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, seen); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
