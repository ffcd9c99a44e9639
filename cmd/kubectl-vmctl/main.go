// Command kubectl-vmctl is the kubectl plugin and in-pod agent that runs
// KubeVirt VirtualMachines under Kubernetes' own workload controllers.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/plugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(plugin.Execute(plugin.NewCmdVmctl(streams), streams))
}
