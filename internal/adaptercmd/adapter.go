// Package adaptercmd is vmctl-metrics-adapter's command: the custom
// metrics API server that serves the guests' CPU as metrics of their agent
// Pods (package guestmetrics), on sigs.k8s.io/custom-metrics-apiserver.
package adaptercmd

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"kubevirt.io/client-go/kubevirt"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver/metrics"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/guestmetrics"
)

// Name is the adapter's name, in its OpenAPI document and its logs.
const Name = "vmctl-metrics-adapter"

// NewCmdMetricsAdapter returns the adapter's command, vmctl-metrics-adapter. Its flags
// are custom-metrics-apiserver's, as metrics-server's and
// prometheus-adapter's are: serving (--secure-port, --cert-dir,
// --tls-cert-file), delegated authentication and authorization, and
// --lister-kubeconfig for the cluster it reads (in the cluster, its
// ServiceAccount).
func NewCmdMetricsAdapter() *cobra.Command {
	base := &basecmd.AdapterBase{Name: Name}
	cmd := &cobra.Command{
		Use:   "vmctl-metrics-adapter",
		Short: "Serve the guests' CPU as custom metrics of their agent Pods, for the HorizontalPodAutoscaler",
		Long: `Serve custom.metrics.k8s.io (v1beta2 and v1beta1) for vmctl's agent Pods:

  ` + guestmetrics.MetricVMCPUUsage + `        the CPU the Pod's VM uses, in cores: its launcher Pod's compute
                      container, where qemu runs the guest
  ` + guestmetrics.MetricVMCPUUtilization + `  that CPU as a percentage of the VM's vCPUs

An HPA on an agent workload names one in a Pods metric, so that it scales on
the guests' load rather than the agents'. The figures come from metrics-server
(metrics.k8s.io), one LIST of a namespace's launcher Pods per request; the
agent Pods and VMIs are watched. A Pod whose launcher has no sample yet has no
value, and the HPA's rule for missing metrics applies.

It runs in the cluster, from the vmctl image, behind an APIService for
custom.metrics.k8s.io, as metrics-server runs behind metrics.k8s.io's.`,
		Example: `  # In the adapter's Deployment (the vmctl image)
  vmctl-metrics-adapter --secure-port=6443 --cert-dir=/tmp/certs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := base.ClientConfig()
			if err != nil {
				return err
			}
			k, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			virt, err := kubevirt.NewForConfig(cfg)
			if err != nil {
				return err
			}
			// A fleet's PodMetrics are a thousand items per question, smaller
			// and quicker to decode in protobuf than in JSON.
			mcfg := rest.CopyConfig(cfg)
			mcfg.ContentType = runtime.ContentTypeProtobuf
			mcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
			m, err := metricsclient.NewForConfig(mcfg)
			if err != nil {
				return err
			}
			if err := metrics.RegisterMetrics(legacyregistry.Register); err != nil {
				return fmt.Errorf("register the adapter's metrics: %w", err)
			}
			src := Follow(cmd.Context(), k, virt, m)
			base.WithCustomMetrics(NewProvider(src))
			config, err := base.Config()
			if err != nil {
				return err
			}
			config.GenericConfig.AddReadyzChecks(healthz.NamedCheck("agent-pods-and-vmis", func(*http.Request) error { return src.NotReady() }))
			return base.Run(cmd.Context())
		},
	}
	base.FlagSet = cmd.Flags()
	base.InstallFlags()
	// Each question costs one LIST of metrics-server, so the HPAs' rate
	// is the adapter's: client-go's default of 5 a second (burst 10) made
	// the answers wait for the throttle, not for metrics-server, from the
	// eleventh question in a burst on (about 180 ms each at 1,000 Pods,
	// while the LIST took 18). The API server's priority and fairness
	// bounds the adapter's requests as it does every client's.
	for name, value := range map[string]string{"client-qps": strconv.Itoa(clientQPS), "client-burst": strconv.Itoa(2 * clientQPS)} {
		f := cmd.Flags().Lookup(name)
		if err := f.Value.Set(value); err != nil {
			panic(err)
		}
		f.DefValue = value
	}
	return cmd
}

// clientQPS is the adapter's default --client-qps: one HPA syncing every
// 15 s asks once, so this serves 750 HPAs unthrottled.
const clientQPS = 50
