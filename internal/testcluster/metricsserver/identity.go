package metricsserver

import (
	"context"
	"path/filepath"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// identity issues a token of metrics-server's ServiceAccount and writes a
// kubeconfig with it, so that RBAC holds metrics-server to upstream's rules
// (the components' client certificates are in system:masters).
func (s *Server) identity(ctx context.Context, c *testcluster.Cluster) (string, error) {
	path := filepath.Join(s.dir, Name+".kubeconfig")
	_, err := c.ServiceAccountKubeconfig(ctx, s.kube, Namespace, Name, path, tokenLifetime)
	return path, err
}
