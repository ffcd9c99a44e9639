package testcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// contextName names the cluster, user and context in the admin kubeconfig.
const contextName = "vmctl-testcluster"

// writeKubeconfig writes an admin kubeconfig with the credentials embedded and
// returns the matching rest.Config.
func writeKubeconfig(path, server string, p *pki) (*rest.Config, error) {
	return writeClientKubeconfig(path, server, p.caPEM, p.adminCert, p.adminKey)
}

// writeClientKubeconfig writes a kubeconfig that authenticates with the
// client certificate cert and key, and returns the matching rest.Config.
func writeClientKubeconfig(path, server string, caPEM, cert, key []byte) (*rest.Config, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, fmt.Errorf("write the kubeconfig: %w", err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	// Tests create objects in bursts; client-go's default 5 QPS would throttle them.
	rc.QPS, rc.Burst = 200, 400
	return rc, nil
}

// componentKubeconfig is the kubeconfig of a component's own identity
// (componentUsers), written by writeComponentKubeconfigs.
func (c *Cluster) componentKubeconfig(component string) string {
	return filepath.Join(c.Dir, component+".kubeconfig")
}

// writeComponentKubeconfigs writes each component's kubeconfig, and sets
// DoublesConfig, once the API server's address is known.
func (c *Cluster) writeComponentKubeconfigs(p *pki) error {
	for _, component := range sortedComponents() {
		client := p.clients[component]
		rc, err := writeClientKubeconfig(c.componentKubeconfig(component), c.RESTConfig.Host, p.caPEM, client[0], client[1])
		if err != nil {
			return fmt.Errorf("%s: %w", component, err)
		}
		if component == Doubles {
			c.DoublesConfig = rc
		}
	}
	return nil
}

// ServiceAccountKubeconfig issues a token of ServiceAccount namespace/sa,
// valid for lifetime, writes a kubeconfig with it to path, and returns the
// matching rest.Config: a process so configured is held to the RBAC of
// that ServiceAccount, where the components' client certificates are in
// system:masters.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, kube kubernetes.Interface, namespace, sa, path string, lifetime time.Duration) (*rest.Config, error) {
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(lifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("issue a token for %s/%s: %w", namespace, sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[sa] = &clientcmdapi.Cluster{Server: c.RESTConfig.Host, CertificateAuthorityData: c.RESTConfig.CAData}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[sa] = &clientcmdapi.Context{Cluster: sa, AuthInfo: sa, Namespace: namespace}
	cfg.CurrentContext = sa
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	rc := rest.AnonymousClientConfig(c.RESTConfig)
	rc.BearerToken = tr.Status.Token
	return rc, nil
}
