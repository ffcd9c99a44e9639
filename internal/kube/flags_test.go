package kube

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// flagSummary is what --help and the parser make of a flag.
type flagSummary struct {
	Shorthand, Type, Default, Usage string
}

func summarize(fs *pflag.FlagSet) map[string]flagSummary {
	out := map[string]flagSummary{}
	fs.VisitAll(func(f *pflag.Flag) {
		out[f.Name] = flagSummary{f.Shorthand, f.Value.Type(), f.DefValue, f.Usage}
	})
	return out
}

// TestConfigFlagsAreKubectls holds ConfigFlags to cli-runtime's, flag for
// flag, so that vmctl-agent takes what `kubectl vmctl agent` takes, and a
// cli-runtime upgrade that adds a flag fails here.
func TestConfigFlagsAreKubectls(t *testing.T) {
	want := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(want)
	wantFlags := summarize(want)
	delete(wantFlags, "cache-dir") // discovery's; the agent has no discovery client
	got := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	NewConfigFlags().AddFlags(got)
	if diff := cmp.Diff(wantFlags, summarize(got)); diff != "" {
		t.Errorf("flags (-cli-runtime +ConfigFlags):\n%s", diff)
	}
}

// TestConfigFlagsLoadAsKubectls parses the same arguments into ConfigFlags
// and cli-runtime's, and wants the same client configuration and namespace
// from both.
func TestConfigFlagsLoadAsKubectls(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443", insecure-skip-tls-verify: true}}
users:
- {name: u, user: {token: from-kubeconfig}}
- {name: v, user: {username: v, password: p}}
contexts:
- {name: a, context: {cluster: a, user: u, namespace: vms}}
- {name: b, context: {cluster: b, user: v}}
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"c.crt", "c.key", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", "")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"kubeconfig alone", nil},
		{"context and namespace", []string{"--context", "b", "-n", "apps"}},
		{"cluster and user", []string{"--cluster", "b", "--user", "v", "--namespace=other"}},
		{"server", []string{"-s", "https://c.example", "--token", "t", "--insecure-skip-tls-verify",
			"--tls-server-name", "api", "--request-timeout", "5s", "--disable-compression"}},
		{"impersonation", []string{"--as", "jane", "--as-uid", "1", "--as-group", "g1", "--as-group", "g2",
			"--as-user-extra", "k=v1", "--as-user-extra", "k=v2", "--as-user-extra", "no-equals"}},
		{"certificates", []string{"--client-certificate", filepath.Join(dir, "c.crt"), "--client-key", filepath.Join(dir, "c.key"),
			"--certificate-authority", filepath.Join(dir, "ca.crt")}},
		{"missing certificate", []string{"--client-certificate", filepath.Join(dir, "missing.crt")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--kubeconfig", kubeconfig}, tt.args...)
			want := genericclioptions.NewConfigFlags(true)
			parse(t, want.AddFlags, args)
			got := NewConfigFlags()
			parse(t, got.AddFlags, args)

			wantRC, wantErr := want.ToRawKubeConfigLoader().ClientConfig()
			gotRC, gotErr := got.ToRawKubeConfigLoader().ClientConfig()
			if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(wantRC, gotRC) {
				t.Errorf("ClientConfig() = %+v, %v; cli-runtime's gives %+v, %v", gotRC, gotErr, wantRC, wantErr)
			}
			wantNS, wantOverridden, wantErr := want.ToRawKubeConfigLoader().Namespace()
			gotNS, gotOverridden, gotErr := got.ToRawKubeConfigLoader().Namespace()
			if (wantErr == nil) != (gotErr == nil) || gotNS != wantNS || gotOverridden != wantOverridden {
				t.Errorf("Namespace() = %q, %v, %v; cli-runtime's gives %q, %v, %v", gotNS, gotOverridden, gotErr, wantNS, wantOverridden, wantErr)
			}
		})
	}
}

func parse(t *testing.T, add func(*pflag.FlagSet), args []string) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
}
