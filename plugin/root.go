// Package plugin holds the cobra commands of kubectl-vmctl, one file per
// subcommand, each an Options struct with Complete, Validate and Run.
package plugin

import (
	"errors"
	"flag"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

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
		NewCmdAgent(kube.NewAgentFactory(flags), streams),
		NewCmdScaffold(f, streams),
		NewCmdCompletion(streams),
		NewCmdStatus(f, streams),
		NewCmdDiff(f, streams),
		NewCmdGC(f, streams),
		NewCmdRollout(f, streams),
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

// Execute runs cmd and returns the process exit code: 0 on success, the code of
// an ExitError, else 1 with the error printed as kubectl prints it.
func Execute(cmd *cobra.Command, streams genericiooptions.IOStreams) int {
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err == nil {
			return exit.Code
		}
		code = exit.Code
	}
	_, _ = fmt.Fprintln(streams.ErrOut, errorMessage(err))
	return code
}

// errorMessage is err as kubectl prints it, with kubectl's hint when the API
// server refused the connection: no kubeconfig at all means localhost:8080,
// which rarely answers. kubectl's own StandardErrorMessage cannot see through
// the context vmctl wraps around its errors.
func errorMessage(err error) string {
	msg := "error: " + err.Error()
	var uerr *url.Error
	if utilnet.IsConnectionRefused(err) && errors.As(err, &uerr) {
		host := uerr.URL
		if u, perr := url.Parse(uerr.URL); perr == nil {
			host = u.Host
		}
		msg += fmt.Sprintf("\nThe connection to the server %s was refused - did you specify the right host or port? (check --kubeconfig, --context and --server; `kubectl cluster-info` tells)", host)
	}
	return msg
}
