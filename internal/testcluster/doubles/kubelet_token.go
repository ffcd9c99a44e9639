package doubles

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// agentTokenSeconds is how long an agent's token lives. The API server caps
// it at its own maximum; a test cluster does not outlive a day.
const agentTokenSeconds = 24 * 60 * 60

// writeAgentKubeconfig writes a kubeconfig at path that authenticates as pod's
// ServiceAccount with a token bound to the Pod, as the kubelet's projected
// token would: RBAC and admission see exactly the Pod's identity, including
// the pod-name and pod-uid extras.
func (k *Kubelet) writeAgentKubeconfig(ctx context.Context, pod *corev1.Pod, path string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](agentTokenSeconds),
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{
		Server:                   k.cfg.Host,
		CertificateAuthority:     k.cfg.CAFile,
		CertificateAuthorityData: k.cfg.CAData,
		TLSServerName:            k.cfg.ServerName,
		InsecureSkipTLSVerify:    k.cfg.Insecure,
	}
	cfg.AuthInfos["pod"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "pod", Namespace: pod.Namespace}
	cfg.CurrentContext = "pod"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write the agent's kubeconfig: %w", err)
	}
	return nil
}
