package metricsadapter

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// DescribeHPA is what an HPA's status says: its replicas, the averages of
// its Pods metrics, and its conditions that are not True. The e2e tests
// and the demo say it when an HPA did not do what they waited for.
func DescribeHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	seen := fmt.Sprintf("replicas %d desired %d", hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas)
	for _, m := range hpa.Status.CurrentMetrics {
		if m.Pods != nil && m.Pods.Current.AverageValue != nil {
			seen += fmt.Sprintf(", %s at %s", m.Pods.Metric.Name, m.Pods.Current.AverageValue)
		}
	}
	for _, c := range hpa.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			seen += fmt.Sprintf(", %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return seen
}
