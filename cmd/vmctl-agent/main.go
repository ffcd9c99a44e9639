// Command vmctl-agent is the agent image's entrypoint: `kubectl-vmctl agent`
// as a command of its own, because the image builder (ko) cannot put "agent"
// in front of the Pod's args. `vmctl-agent PROTOTYPE` runs exactly
// `kubectl-vmctl agent PROTOTYPE`, without the rest of kubectl-vmctl: it
// links no kubectl, cli-runtime or lipgloss, whose initialisation each of
// the fleet's agents would pay for at its start.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agentcmd"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

func main() {
	streams := cmdutil.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(cmdutil.Execute(newCmd(streams), streams))
}

// newCmd returns the agent command as a root command, with kubectl's flags
// of its own. Its help and errors still say `kubectl vmctl agent`, the name
// the docs and scaffold use.
func newCmd(streams cmdutil.IOStreams) *cobra.Command {
	flags := kube.NewConfigFlags()
	cmd := agentcmd.NewCmdAgent(kube.NewAgentFactory(flags), streams)
	flags.AddFlags(cmd.PersistentFlags())
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl vmctl agent"
	// As the kubectl-vmctl root does: cmdutil.Execute prints the error once.
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	return cmd
}
