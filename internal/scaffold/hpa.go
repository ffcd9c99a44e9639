package scaffold

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Autoscale is an HPA that scales an agent workload on its guests' CPU.
type Autoscale struct {
	// Kind and Name are the workload's: a Deployment or a StatefulSet.
	Kind      Kind
	Name      string
	Namespace string
	// HPAName names the HPA; empty, the workload's name, as kubectl
	// autoscale names it.
	HPAName  string
	Min, Max int32
	// VMCPUPercent is the target: the average, over the workload's Pods,
	// of their VMs' CPU as a percentage of their vCPUs
	// (contract.MetricVMCPUUtilization).
	VMCPUPercent int32
}

// DefaultVMCPUPercent is the target when none is given: kubectl
// autoscale's default CPU utilization.
const DefaultVMCPUPercent = 80

// Validate says what is wrong with a, as kubectl autoscale would.
func (a Autoscale) Validate() error {
	switch {
	case a.Kind == KindDaemonSet:
		return fmt.Errorf("a DaemonSet runs one Pod, and so one VM, on each node it selects: no HorizontalPodAutoscaler can scale it; " +
			"to run more VMs there, add nodes, or run the VMs in a Deployment (kubectl vmctl scaffold deployment)")
	case a.Kind != KindDeployment && a.Kind != KindStatefulSet:
		return fmt.Errorf("cannot autoscale a %s: only a Deployment or a StatefulSet of vmctl agents", a.Kind)
	case a.Max < 1:
		return fmt.Errorf("a maximum of %d replicas: give at least 1", a.Max)
	case a.Min < 1:
		return fmt.Errorf("a minimum of %d replicas: give at least 1", a.Min)
	case a.Min > a.Max:
		return fmt.Errorf("a minimum of %d replicas is more than the maximum, %d", a.Min, a.Max)
	case a.VMCPUPercent < 1 || a.VMCPUPercent > 100:
		return fmt.Errorf("a target of %d%% of the VMs' vCPUs: give the share to keep busy on average, 1 to 100", a.VMCPUPercent)
	}
	return nil
}

// HPA is a's HorizontalPodAutoscaler: autoscaling/v2, one Pods metric,
// the guests' CPU as a share of their vCPUs, averaged over the Pods that
// have a value.
func (a Autoscale) HPA() *autoscalingv2.HorizontalPodAutoscaler {
	name := a.HPAName
	if name == "" {
		name = a.Name
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta: metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{
			contract.LabelName: contract.AppName, contract.LabelManagedBy: contract.ManagedBy,
		}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: string(a.Kind), Name: a.Name},
			MinReplicas:    ptr.To(a.Min),
			MaxReplicas:    a.Max,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: contract.MetricVMCPUUtilization},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(int64(a.VMCPUPercent), resource.DecimalSI)},
				},
			}},
		},
	}
}
