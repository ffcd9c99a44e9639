package metricsserver

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// identity issues a token of metrics-server's ServiceAccount and writes a
// kubeconfig with it, so that RBAC holds metrics-server to upstream's rules
// (the components' client certificates are in system:masters).
func (s *Server) identity(ctx context.Context, c *testcluster.Cluster) (string, error) {
	tr, err := s.kube.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("issue a token for %s/%s: %w", Namespace, Name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[Name] = &clientcmdapi.Cluster{Server: c.RESTConfig.Host, CertificateAuthorityData: c.RESTConfig.CAData}
	cfg.AuthInfos[Name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[Name] = &clientcmdapi.Context{Cluster: Name, AuthInfo: Name, Namespace: Namespace}
	cfg.CurrentContext = Name
	path := filepath.Join(s.dir, Name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
