package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// completionTimeout bounds the API calls of one completion, so an unreachable
// cluster costs the shell seconds, not the client's default of minutes.
const completionTimeout = 5 * time.Second

// CompletionOptions are the options of `kubectl vmctl completion`.
type CompletionOptions struct {
	Shell string

	genericiooptions.IOStreams
}

// NewCompletionOptions returns CompletionOptions with their defaults.
func NewCompletionOptions(streams genericiooptions.IOStreams) *CompletionOptions {
	return &CompletionOptions{IOStreams: streams}
}

// NewCmdCompletion returns `kubectl vmctl completion SHELL`. Cobra leaves out
// its default completion command when the root already has one named so.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewCompletionOptions(streams)
	cmd := &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script for kubectl-vmctl",
		Long: `Print a shell completion script for kubectl-vmctl.

Completing "kubectl vmctl ..." (kubectl 1.26 or later, with kubectl's own
completion loaded): kubectl runs the executable kubectl_complete-vmctl from
PATH, which runs "kubectl-vmctl __complete". The release archives ship it next
to kubectl-vmctl; copy both to the same directory on PATH. With krew, create it
once in krew's bin directory:

  printf '#!/usr/bin/env sh\nexec kubectl-vmctl __complete "$@"\n' \
    > "${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-vmctl"
  chmod +x "${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-vmctl"

Completing "kubectl-vmctl ..." run directly: load the script this command
prints.

Bash (needs the bash-completion package):
  source <(kubectl vmctl completion bash)
  # for every new shell:
  kubectl vmctl completion bash > ~/.local/share/bash-completion/completions/kubectl-vmctl

Zsh (needs "autoload -U compinit; compinit" in ~/.zshrc):
  source <(kubectl vmctl completion zsh)
  # for every new shell, into a directory on $fpath:
  kubectl vmctl completion zsh > "${fpath[1]}/_kubectl-vmctl"

Fish:
  kubectl vmctl completion fish | source
  # for every new shell:
  kubectl vmctl completion fish > ~/.config/fish/completions/kubectl-vmctl.fish

PowerShell:
  kubectl vmctl completion powershell | Out-String | Invoke-Expression
  # for every new shell, add the line above to $PROFILE.

Prototype names, namespaces and the other values that come from the cluster
are completed with the current kubeconfig context, -n and --context.`,
		Example:   `  source <(kubectl vmctl completion bash)`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Shell = args[0]
			return o.Run(cmd.Root())
		},
	}
	return cmd
}

// Run writes root's completion script for o.Shell to o.Out, with
// descriptions where the shell can show them.
func (o *CompletionOptions) Run(root *cobra.Command) error {
	switch o.Shell {
	case "bash":
		return root.GenBashCompletionV2(o.Out, true)
	case "zsh":
		return root.GenZshCompletion(o.Out)
	case "fish":
		return root.GenFishCompletion(o.Out, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(o.Out)
	}
	return fmt.Errorf("unsupported shell %q; use one of bash, zsh, fish, powershell", o.Shell)
}

// CompletePrototypes completes a command's first argument, PROTOTYPE, with
// the VirtualMachines vmctl did not derive, in --proto-namespace when the
// command has that flag and it is set, else in -n or the kubeconfig
// context's namespace.
func CompletePrototypes(f kube.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		namespace, err := prototypeNamespace(cmd, f)
		if err != nil {
			return completionFailed(err)
		}
		c, err := f.Clients()
		if err != nil {
			return completionFailed(err)
		}
		ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
		defer cancel()
		names, err := prototypeNames(ctx, c.KubeVirt, namespace, toComplete)
		if err != nil {
			return completionFailed(err)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// RegisterNamespaceCompletion completes -n/--namespace and, when cmd has it,
// --proto-namespace with the cluster's namespaces. Call it after the flags
// are added: on the root for -n, on a command for its --proto-namespace. A
// flag that already has a completion keeps it.
func RegisterNamespaceCompletion(cmd *cobra.Command, f kube.Factory) {
	complete := func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := f.Clients()
		if err != nil {
			return completionFailed(err)
		}
		ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
		defer cancel()
		names, err := namespaceNames(ctx, c.Kube, toComplete)
		if err != nil {
			return completionFailed(err)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	for _, name := range []string{"namespace", "proto-namespace"} {
		if cmd.Flag(name) == nil {
			continue
		}
		if _, ok := cmd.GetFlagCompletionFunc(name); ok {
			continue
		}
		// The flag exists and has no completion, the only two errors cobra returns.
		_ = cmd.RegisterFlagCompletionFunc(name, complete)
	}
}

// prototypeNames returns the sorted names of the VMs in namespace that start
// with prefix and that vmctl did not derive: derived VMs are never prototypes.
func prototypeNames(ctx context.Context, client kubevirt.Interface, namespace, prefix string) ([]string, error) {
	names, err := namesOf(ctx, kube.VMs(client, namespace), prefix, func(vm metav1.Object) bool { return !derive.IsDerived(vm) })
	if err != nil {
		return nil, fmt.Errorf("listing VirtualMachines in namespace %q: %w", namespace, err)
	}
	return names, nil
}

// namespaceNames returns the sorted names of the namespaces that start with
// prefix.
func namespaceNames(ctx context.Context, client kubernetes.Interface, prefix string) ([]string, error) {
	names, err := namesOf(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Namespaces().List(ctx, opts)
	}, prefix, func(metav1.Object) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	return names, nil
}

// namesOf returns the sorted names of the objects list reads that start
// with prefix and that keep keeps.
func namesOf(ctx context.Context, list kube.ListFunc, prefix string, keep func(metav1.Object) bool) ([]string, error) {
	var names []string
	err := kube.EachItem(ctx, list, metav1.ListOptions{}, func(obj runtime.Object) error {
		if m, err := meta.Accessor(obj); err == nil && strings.HasPrefix(m.GetName(), prefix) && keep(m) {
			names = append(names, m.GetName())
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// completionContext is cmd's context; cobra sets it when it runs __complete.
func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// completionFailed offers nothing: a completion must not print errors into
// the shell's line. BASH_COMP_DEBUG_FILE=<file> shows them.
func completionFailed(err error) ([]cobra.Completion, cobra.ShellCompDirective) {
	cobra.CompDebugln("kubectl-vmctl completion: "+err.Error(), false)
	return nil, cobra.ShellCompDirectiveNoFileComp
}
