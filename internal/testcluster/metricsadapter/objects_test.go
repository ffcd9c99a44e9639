package metricsadapter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestLoopback: scaffold's objects but its Deployment, the Service an
// ExternalName of localhost on the adapter's port, and the APIServices
// dialling that port and checking the CA.
func TestLoopback(t *testing.T) {
	m := scaffold.MetricsAdapter{Namespace: "kube-system", CABundle: []byte("ca")}
	var got []string
	for _, obj := range loopback(m, 40123) {
		switch o := obj.(type) {
		case *corev1.Service:
			got = append(got, fmt.Sprintf("Service %s/%s %s %s:%d", o.Namespace, o.Name, o.Spec.Type, o.Spec.ExternalName, o.Spec.Ports[0].Port))
		case *apiregistrationv1.APIService:
			got = append(got, fmt.Sprintf("APIService %s -> %s/%s:%d CA %q", o.Name, o.Spec.Service.Namespace, o.Spec.Service.Name, *o.Spec.Service.Port, o.Spec.CABundle))
		default:
			got = append(got, obj.GetObjectKind().GroupVersionKind().Kind)
		}
	}
	want := []string{
		"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "RoleBinding",
		"Service kube-system/vmctl-metrics-adapter ExternalName localhost:40123",
		`APIService v1beta2.custom.metrics.k8s.io -> kube-system/vmctl-metrics-adapter:40123 CA "ca"`,
		`APIService v1beta1.custom.metrics.k8s.io -> kube-system/vmctl-metrics-adapter:40123 CA "ca"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loopback objects (-want +got):\n%s", diff)
	}
}
