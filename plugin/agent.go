package plugin

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agentcmd"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// newCmdAgent returns agentcmd's `kubectl vmctl agent`, with the
// completions of an operator's shell: PROTOTYPE, -n and --proto-namespace
// from the cluster. vmctl-agent, in a container, goes without them, and so
// without this package.
func newCmdAgent(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := agentcmd.NewCmdAgent(f, cmdutil.IOStreams(streams))
	cmd.ValidArgsFunction = CompletePrototypes(f)
	RegisterNamespaceCompletion(cmd, f)
	return cmd
}
