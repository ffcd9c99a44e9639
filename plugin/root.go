// Package plugin holds the cobra commands of kubectl-vmctl, one file per
// subcommand, each an Options struct with Complete, Validate and Run.
package plugin

import (
	"flag"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// NewCmdVmctl returns the root command, `kubectl vmctl`. kubectl's flags
// (--kubeconfig, --context, -n, --as, ...) are bound once, to its
// persistent flags, and every command reads them through one Factory.
func NewCmdVmctl(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubectl-vmctl",
		Short: "Run KubeVirt VirtualMachines under Deployments, DaemonSets and StatefulSets",
		Long: `vmctl runs KubeVirt VirtualMachines under Kubernetes' own workload controllers.

Each vmctl Pod runs an agent that derives a VirtualMachine from a prototype VM,
pins it to the Pod's node, keeps it running while the Pod lives and deletes it
when the Pod goes. Scaling the Deployment scales the VMs; a DaemonSet puts one
VM on every node.`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl vmctl",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags := genericclioptions.NewConfigFlags(true)
	flags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().AddFlag(verbosityFlag())
	f := kube.NewFactory(flags)
	RegisterNamespaceCompletion(cmd, f)
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		NewCmdVersion(streams),
		// The agent runs in a Pod, with clients of its own (see
		// kube.NewAgentFactory), over the same flags.
		newCmdAgent(kube.NewAgentFactory(flags), streams),
		NewCmdScaffold(f, streams),
		NewCmdCompletion(streams),
		NewCmdStatus(f, streams),
		NewCmdDiff(f, streams),
		NewCmdGC(f, streams),
		NewCmdRollout(f, streams),
		NewCmdAutoscale(f, streams),
		NewCmdTop(f, streams),
	)
	return cmd
}

// verbosityFlag is kubectl's -v: client-go logs each request from 6 up, and
// its headers and bodies from 8, through klog. The agent has a -v of its own
// for its logger, which takes precedence there.
func verbosityFlag() *pflag.Flag {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := pflag.PFlagFromGoFlag(fs.Lookup("v"))
	v.Shorthand = "v"
	return v
}

// Execute runs cmd and returns the process exit code, as cmdutil.Execute.
func Execute(cmd *cobra.Command, streams genericiooptions.IOStreams) int {
	return cmdutil.Execute(cmd, cmdutil.IOStreams(streams))
}
