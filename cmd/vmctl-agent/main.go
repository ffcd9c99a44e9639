// Command vmctl-agent is the agent image's entrypoint: `kubectl-vmctl agent`
// as a command of its own, because the image builder (ko) cannot put "agent"
// in front of the Pod's args. `vmctl-agent PROTOTYPE` runs exactly
// `kubectl-vmctl agent PROTOTYPE`.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/plugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(plugin.Execute(newCmd(streams), streams))
}

// newCmd returns the agent command as a root command, with kubectl's flags
// of its own. Its help and errors still say `kubectl vmctl agent`, the name
// the docs and scaffold use.
func newCmd(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	f := kube.NewAgentFactory(flags)
	cmd := plugin.NewCmdAgent(f, streams)
	flags.AddFlags(cmd.PersistentFlags())
	plugin.RegisterNamespaceCompletion(cmd, f)
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl vmctl agent"
	// As the kubectl-vmctl root does: plugin.Execute prints the error once.
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	return cmd
}
