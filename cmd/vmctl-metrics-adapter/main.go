// Command vmctl-metrics-adapter is the custom metrics API server that
// serves the guests' CPU as metrics of their agent Pods (package
// adaptercmd), a command of its own beside vmctl-agent in the vmctl image.
// It is not a subcommand of kubectl-vmctl or vmctl-agent: the
// custom-metrics-apiserver library it serves with (k8s.io/apiserver and
// its etcd, OpenAPI and metrics packages) would add about 30 ms of package
// initialisation and 24 MB of memory to each of their starts, every
// `kubectl vmctl` command and every agent of a fleet (docs/autoscaling.md).
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/adaptercmd"
)

func main() {
	os.Exit(cli.Run(adaptercmd.NewCmdMetricsAdapter()))
}
