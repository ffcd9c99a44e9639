package plugin

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

func completionVM(namespace, name string, labels, annotations map[string]string) runtime.Object {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: labels, Annotations: annotations,
	}}
}

// derivedVM is a VM the agent made: both labels and the Pod's UID.
func derivedVM(namespace, name string) runtime.Object {
	return completionVM(namespace, name,
		map[string]string{contract.LabelPrototype: "web", contract.LabelPod: "web-0"},
		map[string]string{contract.AnnotationPodUID: "uid-1"})
}

func completionVMs() []runtime.Object {
	return []runtime.Object{
		completionVM("default", "web", nil, nil),
		completionVM("default", "db", nil, nil),
		completionVM("default", "worker", map[string]string{"app": "worker"}, nil),
		derivedVM("default", "web-web-0"),
		derivedVM("default", "db-db-0"),
		// Labels copied without the Pod's UID: not vmctl's, so a prototype.
		completionVM("default", "web-copy", map[string]string{contract.LabelPrototype: "web", contract.LabelPod: "web-0"}, nil),
		completionVM("prod", "web-prod", nil, nil),
		completionVM("protos", "golden", nil, nil),
		derivedVM("protos", "golden-x-0"),
	}
}

func TestPrototypeNames(t *testing.T) {
	tests := []struct {
		name      string
		namespace string
		prefix    string
		want      []string
	}{
		{name: "all prototypes, derived left out", namespace: "default", want: []string{"db", "web", "web-copy", "worker"}},
		{name: "prefix", namespace: "default", prefix: "we", want: []string{"web", "web-copy"}},
		{name: "prefix matching only derived VMs", namespace: "default", prefix: "db-", want: nil},
		{name: "no match", namespace: "default", prefix: "x", want: nil},
		{name: "other namespace", namespace: "protos", want: []string{"golden"}},
		{name: "empty namespace", namespace: "empty", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := kubevirtfake.NewSimpleClientset(completionVMs()...)
			got, err := prototypeNames(t.Context(), client, tt.namespace, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("prototypeNames(%q, %q) (-want +got):\n%s", tt.namespace, tt.prefix, diff)
			}
		})
	}
}

func TestPrototypeNamesFollowsPages(t *testing.T) {
	client := kubevirtfake.NewSimpleClientset()
	pages := map[string]*kubevirtv1.VirtualMachineList{
		"": {ListMeta: metav1.ListMeta{Continue: "page2"}, Items: []kubevirtv1.VirtualMachine{
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		}},
		"page2": {Items: []kubevirtv1.VirtualMachine{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
			*derivedVM("default", "a-a-0").(*kubevirtv1.VirtualMachine),
		}},
	}
	var limits []int64
	client.PrependReactor("list", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		limits = append(limits, opts.Limit)
		return true, pages[opts.Continue], nil
	})
	got, err := prototypeNames(t.Context(), client, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{kube.PageSize, kube.PageSize}, limits); diff != "" {
		t.Errorf("list limits (-want +got):\n%s", diff)
	}
}

func TestPrototypeNamesError(t *testing.T) {
	client := kubevirtfake.NewSimpleClientset()
	client.PrependReactor("list", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	_, err := prototypeNames(t.Context(), client, "default", "")
	if err == nil || !strings.Contains(err.Error(), `namespace "default"`) {
		t.Errorf("error = %v, want one naming the namespace", err)
	}
}

func TestNamespaceNames(t *testing.T) {
	client := kubefake.NewSimpleClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}},
	)
	tests := []struct {
		prefix string
		want   []string
	}{
		{prefix: "", want: []string{"default", "kube-system", "kubevirt"}},
		{prefix: "kube", want: []string{"kube-system", "kubevirt"}},
		{prefix: "kubev", want: []string{"kubevirt"}},
		{prefix: "nope", want: nil},
	}
	for _, tt := range tests {
		got, err := namespaceNames(t.Context(), client, tt.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("namespaceNames(%q) (-want +got):\n%s", tt.prefix, diff)
		}
	}
}

// completionRoot is a root command with one subcommand, "run PROTOTYPE",
// wired like the real commands: kubectl's flags on the root, and
// --proto-namespace, prototype and namespace completion from f, over vms
// and namespaces default, prod and protos, in a context whose namespace is
// prod.
func completionRoot(t *testing.T, vms kubevirt.Interface) *cobra.Command {
	kube := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "protos"}},
	)
	f := fakeapi.NewFactory(t, "prod", kube, vms)
	root := &cobra.Command{Use: "kubectl-vmctl"}
	f.AddFlags(root.PersistentFlags())
	RegisterNamespaceCompletion(root, f)
	var protoNamespace string
	cmd := &cobra.Command{
		Use:               "run PROTOTYPE",
		ValidArgsFunction: CompletePrototypes(f),
		RunE:              func(*cobra.Command, []string) error { return nil },
	}
	cmd.Flags().StringVar(&protoNamespace, "proto-namespace", "", "")
	RegisterNamespaceCompletion(cmd, f)
	root.AddCommand(cmd)
	return root
}

// complete runs cobra's hidden __complete command, as the shell scripts and
// kubectl_complete-vmctl do, and returns the offered values and the directive
// line.
func complete(t *testing.T, root *cobra.Command, args ...string) ([]string, string) {
	t.Helper()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	last := len(lines) - 1
	return lines[:last], lines[last]
}

func TestCompletePrototypes(t *testing.T) {
	noFiles := ":4" // cobra.ShellCompDirectiveNoFileComp
	defaults := []string{"db", "web", "web-copy", "worker"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "kubeconfig namespace", args: []string{"run", ""}, want: []string{"web-prod"}},
		{name: "--context", args: []string{"run", "--context", "without-namespace", ""}, want: defaults},
		{name: "prefix", args: []string{"run", "-n", "default", "w"}, want: []string{"web", "web-copy", "worker"}},
		{name: "-n", args: []string{"run", "-n", "protos", ""}, want: []string{"golden"}},
		{name: "--namespace=", args: []string{"run", "--namespace=default", ""}, want: defaults},
		{name: "--proto-namespace wins over -n", args: []string{"run", "-n", "default", "--proto-namespace", "protos", ""}, want: []string{"golden"}},
		{name: "only the first argument", args: []string{"run", "web", ""}, want: nil},
		{name: "-n values", args: []string{"run", "-n", "p"}, want: []string{"prod", "protos"}},
		{name: "--namespace values", args: []string{"run", "--namespace", ""}, want: []string{"default", "prod", "protos"}},
		{name: "--proto-namespace values", args: []string{"run", "--proto-namespace", "prot"}, want: []string{"protos"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := complete(t, completionRoot(t, kubevirtfake.NewSimpleClientset(completionVMs()...)), tt.args...)
			if got == nil {
				got = []string{}
			}
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("__complete %v (-want +got):\n%s", tt.args, diff)
			}
			if directive != noFiles {
				t.Errorf("directive = %q, want %q (no file completion)", directive, noFiles)
			}
		})
	}
}

func TestCompletePrototypesClusterError(t *testing.T) {
	vms := kubevirtfake.NewSimpleClientset(completionVMs()...)
	vms.PrependReactor("list", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	got, directive := complete(t, completionRoot(t, vms), "run", "")
	if len(got) != 0 || directive != ":4" {
		t.Errorf("__complete on a failing cluster = %q %q, want nothing and :4", got, directive)
	}
}

func TestRegisterNamespaceCompletionKeepsExisting(t *testing.T) {
	f := fakeapi.NewFactory(t, "default", kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}), nil)
	root := &cobra.Command{Use: "kubectl-vmctl"}
	f.AddFlags(root.PersistentFlags())
	mine := func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []string{"mine"}, cobra.ShellCompDirectiveNoFileComp
	}
	if err := root.RegisterFlagCompletionFunc("namespace", mine); err != nil {
		t.Fatal(err)
	}
	// No --proto-namespace flag: registering must skip it, not fail.
	RegisterNamespaceCompletion(root, f)
	root.AddCommand(&cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return nil }})
	got, _ := complete(t, root, "run", "-n", "")
	if diff := cmp.Diff([]string{"mine"}, got); diff != "" {
		t.Errorf("-n completion (-want +got):\n%s", diff)
	}
}

func TestCompletionCommand(t *testing.T) {
	tests := []struct {
		shell string
		want  string // a line only that shell's script has, naming the binary
	}{
		{shell: "bash", want: "complete -o default -F __start_kubectl-vmctl kubectl-vmctl"},
		{shell: "zsh", want: "#compdef kubectl-vmctl"},
		{shell: "fish", want: "complete -c kubectl-vmctl -n '__kubectl_vmctl_clear_perform_completion_once_result'"},
		{shell: "powershell", want: "Register-ArgumentCompleter -CommandName 'kubectl-vmctl'"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			root := NewCmdVmctl(streams)
			root.SetArgs([]string{"completion", tt.shell})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("completion %s: output lacks %q; got:\n%.400s", tt.shell, tt.want, out.String())
			}
		})
	}
}

func TestCompletionCommandRejects(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		streams, _, out, _ := genericiooptions.NewTestIOStreams()
		root := NewCmdVmctl(streams)
		root.SetArgs(args)
		if err := root.Execute(); err == nil {
			t.Errorf("%v: no error", args)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed a script on error:\n%.200s", args, out.String())
		}
	}
}

// The root completes the completion command's shells, through the same
// __complete path kubectl_complete-vmctl uses.
func TestCompletionCommandCompletesShells(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdVmctl(streams)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "completion", "f"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("fish\n:4\n", out.String()); diff != "" {
		t.Errorf("__complete completion f (-want +got):\n%s", diff)
	}
}
