package plugin

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/guestmetrics"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/styled"
)

// TopOptions are the options of `kubectl vmctl top`.
type TopOptions struct {
	AllNamespaces bool
	Color         string

	namespace, prototype string
	color                bool
	clients              kube.Clients

	genericiooptions.IOStreams
}

// NewCmdTop returns `kubectl vmctl top`.
func NewCmdTop(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &TopOptions{Color: string(styled.ColorAuto), IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "top [PROTOTYPE] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show the CPU and memory each agent Pod's VM uses",
		Long: `Show, as kubectl top pod does, each agent Pod with its VM and what the VM uses
by metrics-server's last measure: the guest's CPU (its launcher Pod's compute
container, where qemu runs it) in cores and as a percentage of its vCPUs, the
figures an HPA of kubectl vmctl autoscale scales on, and the launcher Pod's
memory. kubectl top pod shows the agents' own, a few millicores.

Three LISTs: the agent Pods, their VMIs, and the launchers' metrics. A VM
whose launcher metrics-server has not measured yet (a new one is, from its
second scrape) shows <none>.`,
		Example: `  # Every VM of the namespace
  kubectl vmctl top

  # The VMs of prototype web, everywhere
  kubectl vmctl top web -A`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.namespace, err = scopeNamespace(f, o.AllNamespaces); err != nil {
				return err
			}
			if len(args) == 1 {
				o.prototype = args[0]
				if err := validatePrototypeName(o.prototype); err != nil {
					return err
				}
			}
			mode, err := styled.ParseColorMode(o.Color)
			if err != nil {
				return err
			}
			o.color = styled.UseColor(mode, styled.IsTerminal(o.Out), os.Getenv)
			if o.clients, err = f.Clients(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.ValidArgsFunction = CompletePrototypes(f)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Show the VMs of all namespaces.")
	cmd.Flags().StringVar(&o.Color, "color", o.Color, "Color the table: auto (on a terminal, unless NO_COLOR is set), always or never.")
	return cmd
}

// Run lists the agent Pods, their VMIs and their launchers' metrics, and
// prints a row per Pod.
func (o *TopOptions) Run(ctx context.Context) error {
	agents := contract.LabelAgentPrototype
	if o.prototype != "" {
		agents = labels.SelectorFromSet(labels.Set{contract.LabelAgentPrototype: o.prototype}).String()
	}
	pods, err := o.clients.Kube.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: agents})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "No agent Pods found%s.\n", inNamespace(o.namespace))
		return err
	}
	launchers, err := o.clients.Metrics.MetricsV1beta1().PodMetricses(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: guestmetrics.LauncherSelector})
	if apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err) {
		return fmt.Errorf("metrics.k8s.io is not available (%w): the VMs' figures come from metrics-server; install it, or check its APIService: kubectl get apiservice v1beta1.metrics.k8s.io", err)
	}
	if err != nil {
		return err
	}
	vmis, err := o.clients.KubeVirt.KubevirtV1().VirtualMachineInstances(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPod})
	if err != nil {
		return err
	}
	rows := guestmetrics.Top(pods.Items, vmis.Items, launchers.Items)
	headers := []string{"POD", "VM", "VCPUS", "CPU(cores)", "CPU(%)", "MEMORY(bytes)"}
	if o.AllNamespaces {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	var cells [][]styled.Cell
	unsampled := 0
	for _, r := range rows {
		row := []styled.Cell{styled.Text(r.Pod), styled.Text(orNone(r.VM))}
		switch {
		case r.VM == "":
			row = append(row, styled.Text("<none>"), styled.Text("<none>"), styled.Text("<none>"), styled.Text("<none>"))
		case !r.Sampled:
			unsampled++
			row = append(row, styled.Text(fmt.Sprint(r.VCPUs)), styled.Text("<none>"), styled.Text("<none>"), styled.Text("<none>"))
		default:
			percent := r.Percent()
			row = append(row, styled.Text(fmt.Sprint(r.VCPUs)), styled.Text(fmt.Sprintf("%dm", r.CPU.MilliValue())),
				styled.Text(fmt.Sprintf("%.0f%%", percent.AsApproximateFloat64())), styled.Text(fmt.Sprintf("%dMi", r.Memory.Value()/(1<<20))))
		}
		if o.AllNamespaces {
			row = append([]styled.Cell{styled.Text(r.Namespace)}, row...)
		}
		cells = append(cells, row)
	}
	if err := styled.WriteTable(o.Out, headers, cells, o.color); err != nil {
		return err
	}
	if unsampled > 0 {
		_, err = fmt.Fprintf(o.ErrOut, "Warning: metrics-server has not measured the launchers of %d VMs yet; a new launcher has figures from its second scrape.\n", unsampled)
	}
	return err
}

// orNone is s, or <none> where s is empty, as kubectl prints a missing value.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
