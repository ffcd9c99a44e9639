package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// AutoscaleOptions are the options of `kubectl vmctl autoscale`.
type AutoscaleOptions struct {
	PrintFlags *genericclioptions.PrintFlags

	a       scaffold.Autoscale
	dryRun  cmdutil.DryRunStrategy
	printer printers.ResourcePrinter
	clients kube.Clients

	genericiooptions.IOStreams
}

// NewCmdAutoscale returns `kubectl vmctl autoscale`.
func NewCmdAutoscale(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AutoscaleOptions{
		PrintFlags: genericclioptions.NewPrintFlags("autoscaled").WithTypeSetter(scheme.Scheme),
		a:          scaffold.Autoscale{Min: 1, VMCPUPercent: scaffold.DefaultVMCPUPercent},
		IOStreams:  streams,
	}
	cmd := &cobra.Command{
		Use:                   "autoscale (deployment | statefulset) NAME --max=MAXPODS [--min=MINPODS] [--vm-cpu-percent=PERCENT] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Scale a workload of VMs on its guests' CPU, with a HorizontalPodAutoscaler",
		Long: `Create an autoscaling/v2 HorizontalPodAutoscaler for a Deployment or StatefulSet
of vmctl agents, as kubectl autoscale does, that scales it on its guests' own
CPU rather than its agents': a Pods metric, ` + contract.MetricVMCPUUtilization + `, the CPU each Pod's VM
uses as a percentage of its vCPUs, averaged over the Pods. The HPA adds Pods
while the average is above --vm-cpu-percent and removes them while it is below,
between --min and --max; each Pod brings or takes its VM.

vmctl-metrics-adapter serves the metric (custom.metrics.k8s.io), from
metrics-server's figures for the VMs' launcher Pods: without it the HPA reports
FailedGetPodsMetric and scales nothing (docs/autoscaling.md).

A DaemonSet is refused: it runs one Pod per node, and no HPA scales it.`,
		Example: `  # Keep web's VMs 60% busy on average, with 2 to 10 of them
  kubectl vmctl autoscale deployment web --min=2 --max=10 --vm-cpu-percent=60

  # The HPA to commit to Git
  kubectl vmctl autoscale statefulset/db --max=5 --dry-run=client -o yaml`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			if err := o.a.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().Int32Var(&o.a.Min, "min", o.a.Min, "The lower limit for the number of Pods, and so of VMs.")
	cmd.Flags().Int32Var(&o.a.Max, "max", o.a.Max, "The upper limit for the number of Pods, and so of VMs. Required.")
	_ = cmd.MarkFlagRequired("max")
	cmd.Flags().Int32Var(&o.a.VMCPUPercent, "vm-cpu-percent", o.a.VMCPUPercent,
		"The target: the CPU the VMs use, as a percentage of their vCPUs, averaged over the Pods.")
	cmd.Flags().StringVar(&o.a.HPAName, "name", "", "The name of the HPA. Defaults to the workload's.")
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// Complete reads the workload as kubectl autoscale takes it (TYPE NAME or
// TYPE/NAME), the namespace, the dry-run strategy, the printer and the
// clients.
func (o *AutoscaleOptions) Complete(f kube.Factory, cmd *cobra.Command, args []string) error {
	kind, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if k, n, ok := strings.Cut(args[0], "/"); ok {
		kind, name = k, n
	}
	if name == "" {
		return fmt.Errorf("give the workload as TYPE NAME or TYPE/NAME, e.g. deployment web")
	}
	switch strings.ToLower(kind) {
	case "deployment", "deployments", "deploy", "deployment.apps":
		o.a.Kind = scaffold.KindDeployment
	case "statefulset", "statefulsets", "sts", "statefulset.apps":
		o.a.Kind = scaffold.KindStatefulSet
	case "daemonset", "daemonsets", "ds", "daemonset.apps":
		o.a.Kind = scaffold.KindDaemonSet
	default:
		return fmt.Errorf("cannot autoscale a %q: give a deployment or a statefulset of vmctl agents", kind)
	}
	o.a.Name = name
	var err error
	if o.a.Namespace, err = scopeNamespace(f, false); err != nil {
		return err
	}
	if o.dryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.printer, err = cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.dryRun).ToPrinter(); err != nil {
		return err
	}
	if o.dryRun != cmdutil.DryRunClient {
		o.clients, err = f.Clients()
	}
	return err
}

// Run checks that the workload runs vmctl agents, creates the HPA (unless
// a client-side dry run) and prints it.
func (o *AutoscaleOptions) Run(ctx context.Context) error {
	hpa := o.a.HPA()
	if o.dryRun == cmdutil.DryRunClient {
		return o.printer.PrintObj(hpa, o.Out)
	}
	if err := o.checkWorkload(ctx); err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldManager: contract.ManagedBy}
	if o.dryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	created, err := o.clients.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.a.Namespace).Create(ctx, hpa, opts)
	if err != nil {
		return err
	}
	if _, err := o.clients.Kube.Discovery().ServerResourcesForGroupVersion("custom.metrics.k8s.io/v1beta2"); err != nil {
		_, _ = fmt.Fprintf(o.ErrOut, "Warning: the cluster serves no custom.metrics.k8s.io/v1beta2 (%v): the HPA reports FailedGetPodsMetric and scales nothing until vmctl-metrics-adapter runs (docs/autoscaling.md)\n", err)
	}
	return o.printer.PrintObj(created, o.Out)
}

// checkWorkload refuses a workload that is missing or runs no vmctl
// agents: an HPA on it would find no VM metric.
func (o *AutoscaleOptions) checkWorkload(ctx context.Context) error {
	var labels map[string]string
	var err error
	apps := o.clients.Kube.AppsV1()
	switch o.a.Kind {
	case scaffold.KindDeployment:
		d, gerr := apps.Deployments(o.a.Namespace).Get(ctx, o.a.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			labels = d.Spec.Template.Labels
		}
	default:
		s, gerr := apps.StatefulSets(o.a.Namespace).Get(ctx, o.a.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			labels = s.Spec.Template.Labels
		}
	}
	ref := strings.ToLower(string(o.a.Kind)) + "/" + o.a.Name
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found in namespace %s: check the name, or pass -n", ref, o.a.Namespace)
	}
	if err != nil {
		return err
	}
	if labels[contract.LabelAgentPrototype] == "" {
		return fmt.Errorf("%s runs no vmctl agents (its Pod template has no %s label), so it has no VM metric to scale on; "+
			"for its own Pods' CPU use kubectl autoscale", ref, contract.LabelAgentPrototype)
	}
	return nil
}
