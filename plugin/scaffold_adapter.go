package plugin

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/cert"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/version"
)

// newCmdScaffoldMetricsAdapter returns `kubectl vmctl scaffold
// metrics-adapter`: the custom metrics server an HPA on a fleet's guests'
// CPU reads (kubectl vmctl autoscale), one per cluster.
func newCmdScaffoldMetricsAdapter(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	output, caFile := "yaml", ""
	m := scaffold.MetricsAdapter{Image: scaffold.DefaultImage(version.Get().Version)}
	cmd := &cobra.Command{
		Use:   "metrics-adapter",
		Short: "Print the manifests of vmctl-metrics-adapter, which serves the guests' CPU to HorizontalPodAutoscalers",
		Long: `Print what a cluster admin applies once so that HorizontalPodAutoscalers can
scale fleets on their guests' own CPU (kubectl vmctl autoscale): a Deployment
of the vmctl image running /vmctl-metrics-adapter, its ServiceAccount and
Service, its read-only RBAC (agent Pods, VMIs and metrics-server's Pod metrics;
the delegation of its callers' authentication and authorization to the API
server), and the APIServices of custom.metrics.k8s.io v1beta2 and v1beta1.
It needs metrics-server, which serves the launcher Pods' CPU.

Only one server may own custom.metrics.k8s.io: on a cluster that runs
prometheus-adapter for it, use that instead (docs/autoscaling.md).

The adapter serves a certificate it makes at start, which the APIServices do
not check, as metrics-server's default manifests do. With --ca-bundle, it
serves the certificate of the Secret vmctl-metrics-adapter-tls (tls.crt,
tls.key; e.g. cert-manager's, for the name vmctl-metrics-adapter.NAMESPACE.svc)
and the APIServices check it against that CA.`,
		Example: `  # Once per cluster, after metrics-server
  kubectl vmctl scaffold metrics-adapter -n vmctl-system | kubectl apply -f -

  # With a certificate the aggregator checks
  kubectl vmctl scaffold metrics-adapter -n vmctl-system --ca-bundle=ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if m.Namespace, err = cmdutil.ContextNamespace(f); err != nil {
				return err
			}
			if caFile != "" {
				if m.CABundle, err = os.ReadFile(caFile); err != nil {
					return fmt.Errorf("--ca-bundle: %w", err)
				}
				if _, err := cert.ParseCertsPEM(m.CABundle); err != nil {
					return fmt.Errorf("--ca-bundle %s holds no PEM certificate: %w", caFile, err)
				}
			}
			return writeManifests(streams.Out, output, m.Objects())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", output, "Output format. One of: (yaml, json).")
	cmd.Flags().StringVar(&m.Image, "image", m.Image, "The vmctl image, which holds /vmctl-metrics-adapter.")
	cmd.Flags().StringVar(&caFile, "ca-bundle", caFile, "A PEM file of the CA that signed the certificate in the Secret vmctl-metrics-adapter-tls, which the adapter then serves and the API server checks.")
	return cmd
}
