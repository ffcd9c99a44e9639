package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// TestScaffoldMetricsAdapter: the adapter's manifests, in the namespace
// -n names; with --ca-bundle the APIServices check that CA and the adapter
// serves the Secret's certificate, without it they check nothing and it
// makes its own.
func TestScaffoldMetricsAdapter(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.crt")
	const pem = "-----BEGIN CERTIFICATE-----\nMIIBhTCCASugAwIBAgIQIRi6zePL6mKjOipn+dNuaTAKBggqhkjOPQQDAjASMRAw\nDgYDVQQKEwdBY21lIENvMB4XDTE3MTAyMDE5NDMwNloXDTE4MTAyMDE5NDMwNlow\nEjEQMA4GA1UEChMHQWNtZSBDbzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABD0d\n7VNhbWvZLWPuj/RtHFjvtJBEwOkhbN/BnnE8rnZR8+sbwnc/KhCk3FhnpHZnQz7B\n5aETbbIgmuvewdjvSBSjYzBhMA4GA1UdDwEB/wQEAwICpDATBgNVHSUEDDAKBggr\nBgEFBQcDATAPBgNVHRMBAf8EBTADAQH/MCkGA1UdEQQiMCCCDmxvY2FsaG9zdDo1\nNDUzgg4xMjcuMC4wLjE6NTQ1MzAKBggqhkjOPQQDAgNIADBFAiEA2zpJEPQyz6/l\nWf86aX6PepsntZv2GYlA5UpabfT2EZICICpJ5h/iI+i341gBmLiAFQOyTDT+/wQc\n6MF9+Yw1Yy0t\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(ca, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout
		not  []string
		err  string
	}{
		{name: "its own certificate", args: []string{"-n", "vmctl-system"},
			want: []string{"kind: APIService", "name: v1beta2.custom.metrics.k8s.io", "name: v1beta1.custom.metrics.k8s.io", "insecureSkipTLSVerify: true",
				"namespace: vmctl-system", "- /vmctl-metrics-adapter", "name: system:auth-delegator", "name: extension-apiserver-authentication-reader",
				"- --cert-dir=/tmp/certs"},
			not: []string{"caBundle", "--tls-cert-file", "secretName"}},
		{name: "a CA bundle", args: []string{"-n", "vmctl-system", "--ca-bundle", ca},
			want: []string{"caBundle: LS0t", "--tls-cert-file=/etc/vmctl-metrics-adapter/tls.crt", "secretName: vmctl-metrics-adapter-tls"},
			not:  []string{"insecureSkipTLSVerify"}},
		{name: "a CA bundle that is none", args: []string{"--ca-bundle", os.Args[0]}, err: "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeapi.NewFactory(t, "default", kubefake.NewClientset(), kubevirtfake.NewSimpleClientset())
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			err := opRun(t.Context(), f, newCmdScaffoldMetricsAdapter(f, streams), tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("output holds %q", n)
				}
			}
			for i, doc := range strings.Split(out.String(), "\n---\n") {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m["kind"] == nil {
					t.Errorf("document %d is no object (%v):\n%s", i, err, doc)
				}
			}
		})
	}
}

// TestScaffoldAutoscaleFlags: --autoscale-min and --vm-cpu-percent only
// shape the HPA --autoscale-max adds, and --replicas cannot stand beside
// it.
func TestScaffoldAutoscaleFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--autoscale-max=3", "--replicas=2"}, "drop --replicas"},
		{[]string{"--vm-cpu-percent=50"}, "add --autoscale-max"},
		{[]string{"--autoscale-min=2"}, "add --autoscale-max"},
	} {
		f := fakeapi.NewFactory(t, "vms", kubefake.NewClientset(), kubevirtfake.NewSimpleClientset())
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		err := opRun(t.Context(), f, NewCmdScaffold(f, streams), append([]string{"deployment", "testvm"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("scaffold deployment testvm %s: error %v, want one saying %q", strings.Join(tc.args, " "), err, tc.err)
		}
	}
}
