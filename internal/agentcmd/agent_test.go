package agentcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// writeAgentKubeconfig writes a kubeconfig for server whose context's
// namespace is "from-kubeconfig", and returns its path.
func writeAgentKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q}
users:
- name: test
  user: {token: secret}
contexts:
- name: test
  context: {cluster: test, user: test, namespace: from-kubeconfig}
current-context: test
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newTestAgentOptions returns options that see env as the environment, no
// service account, and fail the test on exit.
func newTestAgentOptions(t *testing.T, env map[string]string) (*AgentOptions, cmdutil.IOStreams) {
	streams := cmdutil.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	o := NewAgentOptions(streams)
	o.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o.Hostname = func() (string, error) { return "hostname-pod", nil }
	o.ServiceAccountNamespaceFile = filepath.Join(t.TempDir(), "no-such-namespace-file")
	o.PodInfoNameFile = filepath.Join(t.TempDir(), "no-such-podinfo-name")
	o.TerminationLogPath = filepath.Join(t.TempDir(), "no-termination-log")
	o.Exit = func(code int) { t.Errorf("exit(%d)", code) }
	return o, streams
}

// agentCmd returns the agent command bound to o as vmctl-agent makes it:
// kubectl's flags on the command itself, read through the agent's factory.
func agentCmd(o *AgentOptions) (*cobra.Command, kube.Factory) {
	flags := kube.NewConfigFlags()
	f := kube.NewAgentFactory(flags)
	cmd := newCmdAgent(f, o)
	flags.AddFlags(cmd.PersistentFlags())
	return cmd, f
}

func TestAgentBadArgumentsAreFatal(t *testing.T) {
	kubeconfig := writeAgentKubeconfig(t, "https://127.0.0.1:1")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no prototype", nil, "agent takes exactly one argument, the prototype VM's name, not 0"},
		{"two prototypes", []string{"a", "b"}, "agent takes exactly one argument, the prototype VM's name, not 2"},
		{"invalid prototype name", []string{"Test_VM"}, `prototype "Test_VM" is not a valid name`},
		{"invalid namespace", []string{"testvm", "-n", "Bad.NS"}, `namespace "Bad.NS" is not a valid name`},
		{"unknown flag", []string{"testvm", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"zero delete timeout", []string{"testvm", "--delete-timeout=0s"}, "delete timeout must be positive"},
		{"invalid subdomain", []string{"testvm", "--subdomain=Web.Svc"}, `subdomain "Web.Svc" is not a valid Service name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, streams := newTestAgentOptions(t, map[string]string{contract.EnvPodName: "vmctl-abc"})
			o.TerminationLogPath = filepath.Join(t.TempDir(), "termination-log")
			if err := os.WriteFile(o.TerminationLogPath, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, _ := agentCmd(o)
			cmd.SetArgs(append(tt.args, "--kubeconfig", kubeconfig))
			if code := cmdutil.Execute(cmd, streams); code == 0 {
				t.Fatal("exit code 0, want non-zero")
			}
			got, err := os.ReadFile(o.TerminationLogPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tt.want) {
				t.Errorf("termination log = %q, want it to contain %q", got, tt.want)
			}
			if errOut := streams.ErrOut.(interface{ String() string }).String(); !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q too", errOut, tt.want)
			}
		})
	}
}

func TestAgentTerminationLogOnlyWhenPresent(t *testing.T) {
	o, streams := newTestAgentOptions(t, nil)
	cmd, _ := agentCmd(o)
	cmd.SetArgs([]string{})
	if code := cmdutil.Execute(cmd, streams); code == 0 {
		t.Fatal("exit code 0 without a prototype")
	}
	if _, err := os.Stat(o.TerminationLogPath); !os.IsNotExist(err) {
		t.Errorf("termination log created outside a container: stat error %v", err)
	}
}

func TestAgentComplete(t *testing.T) {
	kubeconfig := writeAgentKubeconfig(t, "https://127.0.0.1:1")
	downward := map[string]string{contract.EnvPodName: "vmctl-abc", contract.EnvPodNamespace: "apps", contract.EnvNodeName: "node-1", contract.EnvPodUID: "uid-1"}
	tests := []struct {
		name  string
		env   map[string]string
		flags []string
		// podInfo, when set, is written to the /etc/podinfo/name stand-in.
		podInfo string
		want    agent.Config
	}{{
		name: "in a Pod with the downward API",
		env:  downward,
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "apps", Namespace: "apps",
			Pod: agent.Identity{PodName: "vmctl-abc", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"}},
	}, {
		name:  "-n moves the VM and the prototype, not the Pod",
		env:   downward,
		flags: []string{"-n", "vms"},
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "vms", Namespace: "vms",
			Pod: agent.Identity{PodName: "vmctl-abc", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"}},
	}, {
		name:  "--proto-namespace moves the prototype only",
		env:   downward,
		flags: []string{"--proto-namespace", "protos", "--allow-shared-volumes", "--probe-address", ":9090", "--delete-timeout", "1m"},
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "protos", Namespace: "apps", AllowSharedVolumes: true,
			ProbeAddress: ":9090", DeleteTimeout: time.Minute,
			Pod: agent.Identity{PodName: "vmctl-abc", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"}},
	}, {
		name: "a Pod whose template pins a VM revision",
		env: map[string]string{contract.EnvPodName: "vmctl-abc", contract.EnvPodNamespace: "apps", contract.EnvNodeName: "node-1", contract.EnvPodUID: "uid-1",
			contract.EnvVMRevision: "5f1c0b9e2a"},
		flags: []string{"--" + contract.FlagVMRevisions + "=web-vm-revisions"},
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "apps", Namespace: "apps", VMRevisionHash: "5f1c0b9e2a", StoreName: "web-vm-revisions",
			Pod: agent.Identity{PodName: "vmctl-abc", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"}},
	}, {
		name:  "a StatefulSet's agent: --subdomain",
		env:   map[string]string{contract.EnvPodName: "web-0", contract.EnvPodNamespace: "apps", contract.EnvNodeName: "node-1", contract.EnvPodUID: "uid-1"},
		flags: []string{"--subdomain", "web"},
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "apps", Namespace: "apps", Subdomain: "web",
			Pod: agent.Identity{PodName: "web-0", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"}},
	}, {
		name:    "the original design's manifests: the name from /etc/podinfo/name, not the hostname",
		env:     map[string]string{contract.EnvPodNamespace: "apps"},
		podInfo: "vmctl-5d8f-x2x9z\n",
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "apps", Namespace: "apps",
			Pod: agent.Identity{PodName: "vmctl-5d8f-x2x9z", PodNamespace: "apps"}},
	}, {
		name:  "outside a Pod: hostname override and the kubeconfig's namespace",
		flags: []string{"--hostname-override", "vmctl-0"},
		want: agent.Config{Prototype: "testvm", PrototypeNamespace: "from-kubeconfig", Namespace: "from-kubeconfig",
			Pod: agent.Identity{PodName: "vmctl-0", PodNamespace: "from-kubeconfig"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := newTestAgentOptions(t, tt.env)
			if tt.podInfo != "" {
				if err := os.WriteFile(o.PodInfoNameFile, []byte(tt.podInfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd, f := agentCmd(o)
			if err := cmd.ParseFlags(append(tt.flags, "--kubeconfig", kubeconfig)); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(f, cmd, []string{"testvm"}); err != nil {
				t.Fatalf("Complete() = %v", err)
			}
			if err := o.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			want := tt.want
			if want.ProbeAddress == "" {
				want.ProbeAddress = agent.DefaultProbeAddress
			}
			if want.DeleteTimeout == 0 {
				want.DeleteTimeout = agent.DefaultDeleteTimeout
			}
			if diff := cmp.Diff(want, o.config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAgentRunsAgainstAPIServer runs the command's Run against an HTTP server
// that answers like an API server without the revision store: the agent
// asks for its revision store, finding none, watches it by name, says why it
// waits on /readyz, and exits 0 on cancel. A Pod that pins no revision asks
// for no VM and no store, and says so on /readyz.
func TestAgentRunsAgainstAPIServer(t *testing.T) {
	downward := map[string]string{contract.EnvPodName: "vmctl-abc", contract.EnvPodNamespace: "default", contract.EnvNodeName: "node-1", contract.EnvPodUID: "uid-1"}
	pinned := maps.Clone(downward)
	pinned[contract.EnvVMRevision] = "5f1c0b9e2a"
	for _, tt := range []struct {
		name   string
		env    map[string]string
		flags  []string
		readyz string
		// first is the first request; then, when set, the path and
		// query a later request starts with.
		first, then string
	}{{
		name:   "unpinned",
		env:    downward,
		readyz: stuck.ReasonNotPinned,
	}, {
		name:   "pinned",
		env:    pinned,
		flags:  []string{"--" + contract.FlagVMRevisions + "=web-vm-revisions"},
		readyz: stuck.ReasonRevisionMissing,
		first:  "GET /apis/vmctl.kubevirt.io/v1alpha1/namespaces/default/vmrevisionstores/web-vm-revisions kubectl-vmctl-agent",
		then:   "/apis/vmctl.kubevirt.io/v1alpha1/namespaces/default/vmrevisionstores?fieldSelector=metadata.name%3Dweb-vm-revisions",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var requests, queries []string
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests = append(requests, r.Method+" "+r.URL.Path+" "+strings.SplitN(r.UserAgent(), "/", 2)[0])
				queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,`+
					`"details":{"name":"testvm","group":"kubevirt.io","kind":"virtualmachines"}}`)
			}))
			defer api.Close()

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			probeAddr := ln.Addr().String()
			_ = ln.Close()

			o, _ := newTestAgentOptions(t, tt.env)
			// The Event sender may still log a failed POST just after Run returns.
			logs := &lockedBuffer{}
			o.ErrOut = logs
			cmd, f := agentCmd(o)
			if err := cmd.ParseFlags(append(tt.flags, "--kubeconfig", writeAgentKubeconfig(t, api.URL), "--probe-address", probeAddr)); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(f, cmd, []string{"testvm"}); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- o.Run(ctx) }()

			var body string
			err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				resp, err := http.Get("http://" + probeAddr + "/readyz")
				if err != nil {
					return false, nil
				}
				defer func() { _ = resp.Body.Close() }()
				b, err := io.ReadAll(resp.Body)
				body = string(b)
				if err != nil {
					return false, nil
				}
				return resp.StatusCode == http.StatusServiceUnavailable && body == tt.readyz+"\n", nil
			})
			if err != nil {
				t.Fatalf("/readyz never said why it waits; last body %q", body)
			}
			if tt.then != "" {
				err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					mu.Lock()
					defer mu.Unlock()
					return slices.ContainsFunc(queries, func(q string) bool { return strings.HasPrefix(q, tt.then) }), nil
				})
				if err != nil {
					mu.Lock()
					t.Errorf("no request of %s; requests: %q", tt.then, queries)
					mu.Unlock()
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run() = %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.first == "" {
				// A Pod that pins no revision has nothing to read a VM of.
				for _, r := range requests {
					if strings.Contains(r, "/apis/kubevirt.io/") || strings.Contains(r, "/apis/vmctl.kubevirt.io/") {
						t.Errorf("request %q, want none of a VM or a revision store", r)
					}
				}
			} else if len(requests) == 0 || requests[0] != tt.first {
				t.Errorf("first request = %v, want %q", requests, tt.first)
			}
			if log := logs.String(); !strings.Contains(log, `prototype="default/testvm"`) {
				t.Errorf("log does not name the prototype:\n%s", log)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
