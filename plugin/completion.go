package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// completionTimeout bounds the API calls of one completion, so an unreachable
// cluster costs the shell seconds, not the client's default of minutes.
const completionTimeout = 5 * time.Second

// completionListLimit pages completion LISTs, as kubectl get does.
const completionListLimit = 500

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
// command has that flag and it is set, else in -n or the kubeconfig context's
// namespace. getter must be the ConfigFlags bound to the command's flags, so
// --kubeconfig, --context and -n are parsed when the completion runs:
//
//	cmd.ValidArgsFunction = CompletePrototypes(o.ConfigFlags)
func CompletePrototypes(getter genericclioptions.RESTClientGetter) cobra.CompletionFunc {
	return completePrototypes(getter, func(c *rest.Config) (kubevirt.Interface, error) { return kubevirt.NewForConfig(c) })
}

func completePrototypes(getter genericclioptions.RESTClientGetter, newClient func(*rest.Config) (kubevirt.Interface, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		namespace, err := prototypeNamespace(cmd, getter)
		if err != nil {
			return completionFailed(err)
		}
		rc, err := getter.ToRESTConfig()
		if err != nil {
			return completionFailed(err)
		}
		client, err := newClient(rc)
		if err != nil {
			return completionFailed(err)
		}
		ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
		defer cancel()
		names, err := prototypeNames(ctx, client, namespace, toComplete)
		if err != nil {
			return completionFailed(err)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// RegisterNamespaceCompletion completes -n/--namespace and, when cmd has it,
// --proto-namespace with the cluster's namespaces. Call it after the flags are
// added, with the ConfigFlags bound to them:
//
//	o.ConfigFlags.AddFlags(cmd.Flags())
//	RegisterNamespaceCompletion(cmd, o.ConfigFlags)
//
// A flag that already has a completion keeps it.
func RegisterNamespaceCompletion(cmd *cobra.Command, getter genericclioptions.RESTClientGetter) {
	registerNamespaceCompletion(cmd, getter, func(c *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(c) })
}

func registerNamespaceCompletion(cmd *cobra.Command, getter genericclioptions.RESTClientGetter, newClient func(*rest.Config) (kubernetes.Interface, error)) {
	complete := func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		rc, err := getter.ToRESTConfig()
		if err != nil {
			return completionFailed(err)
		}
		client, err := newClient(rc)
		if err != nil {
			return completionFailed(err)
		}
		ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
		defer cancel()
		names, err := namespaceNames(ctx, client, toComplete)
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

// prototypeNamespace is where PROTOTYPE lives: --proto-namespace if set, else
// -n, else the kubeconfig context's namespace.
func prototypeNamespace(cmd *cobra.Command, getter genericclioptions.RESTClientGetter) (string, error) {
	if f := cmd.Flag("proto-namespace"); f != nil && f.Value.String() != "" {
		return f.Value.String(), nil
	}
	namespace, _, err := getter.ToRawKubeConfigLoader().Namespace()
	return namespace, err
}

// prototypeNames returns the sorted names of the VMs in namespace that start
// with prefix and that vmctl did not derive: derived VMs are never prototypes.
func prototypeNames(ctx context.Context, client kubevirt.Interface, namespace, prefix string) ([]string, error) {
	var names []string
	opts := metav1.ListOptions{Limit: completionListLimit}
	for {
		list, err := client.KubevirtV1().VirtualMachines(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing VirtualMachines in namespace %q: %w", namespace, err)
		}
		for i := range list.Items {
			vm := &list.Items[i]
			if strings.HasPrefix(vm.Name, prefix) && !derive.IsDerived(vm) {
				names = append(names, vm.Name)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Strings(names)
	return names, nil
}

// namespaceNames returns the sorted names of the namespaces that start with
// prefix.
func namespaceNames(ctx context.Context, client kubernetes.Interface, prefix string) ([]string, error) {
	var names []string
	opts := metav1.ListOptions{Limit: completionListLimit}
	for {
		list, err := client.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, prefix) {
				names = append(names, ns.Name)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Strings(names)
	return names, nil
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
