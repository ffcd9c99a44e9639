package scaffold

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// vmService fronts the derived VMs. Their launcher Pods carry the prototype
// label from the VM template; the agent Pods do not, so they are never
// selected.
func (p Params) vmService() *corev1.Service {
	target := p.Service.TargetPort
	if target.Type == intstr.Int && target.IntVal == 0 {
		target = intstr.FromInt32(p.Service.Port)
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      p.Name + vmServiceSuffix,
			Namespace: p.Namespace,
			Labels:    p.labels(ComponentVMs),
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{contract.LabelPrototype: derive.LabelValue(p.Prototype)},
			Ports: []corev1.ServicePort{{
				Protocol:   corev1.ProtocolTCP,
				Port:       p.Service.Port,
				TargetPort: target,
			}},
		},
	}
}

// podDisruptionBudget guards the agent Pods, whose readiness is their VM's, so
// a drain keeps MinAvailable VMs running.
func (p Params) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: p.objectMeta(contract.ComponentAgent),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: p.PDBMinAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: p.selectorLabels()},
		},
	}
}

// podMonitor has a Prometheus Operator scrape the agents' /metrics. It is
// built as unstructured: the Prometheus Operator's Go types are a large
// module for one small object.
func (p Params) podMonitor() *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range p.labels(contract.ComponentAgent) {
		labels[k] = v
	}
	selector := map[string]any{}
	for k, v := range p.selectorLabels() {
		selector[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PodMonitor",
		"metadata": map[string]any{
			"name":      p.Name,
			"namespace": p.Namespace,
			"labels":    labels,
		},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": selector},
			"podMetricsEndpoints": []any{
				map[string]any{"port": probePortName, "path": metricsPath},
			},
		},
	}}
}
