package cmdutil

import (
	"fmt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// ContextNamespace is -n, else the kubeconfig context's namespace, which
// clientcmd gives as "default" when the context names none.
func ContextNamespace(f kube.KubeconfigLoader) (string, error) {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the kubeconfig for the namespace: %w; check --kubeconfig and --context (`kubectl config get-contexts` lists them)", err)
	}
	if ns == "" {
		ns = "default"
	}
	return ns, nil
}
