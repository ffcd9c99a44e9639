package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// The agent's own share and what its Pod asks for with a VM's room held.
func ownRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
}

func ownLimits() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
}

func reservedRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1110m"), corev1.ResourceMemory: resource.MustParse("12320Mi")}
}

// reservingConfig is an agent whose Pod holds its VM's room: requests now
// are reservedRequests, or own when it gave them back before a restart.
func reservingConfig(now corev1.ResourceList) Config {
	cfg := testConfig()
	cfg.OwnRequests, cfg.OwnLimits, cfg.Requests = ownRequests(), ownLimits(), now
	return cfg
}

// agentPod is the agent's Pod as the API server holds it, with requests.
func agentPod(requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNamespace, UID: testPodUID},
		Spec: corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{
			Name: contract.ContainerName, Resources: corev1.ResourceRequirements{Requests: requests},
		}}},
	}
}
