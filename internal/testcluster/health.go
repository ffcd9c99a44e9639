package testcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// etcdHealthy asks etcd's /health endpoint.
func etcdHealthy(ctx context.Context, clientURL string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return false, fmt.Errorf("etcd /health: %s %s", resp.Status, body)
	}
	return true, nil
}

// kwokHealthy asks kwok's server for url, its /healthz.
func kwokHealthy(ctx context.Context, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return false, fmt.Errorf("kwok %s: %s %s", url, resp.Status, body)
	}
	return true, nil
}

// restConfigForRaw is cfg set up for a raw RESTClient.
func restConfigForRaw(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}
