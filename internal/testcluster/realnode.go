package testcluster

import (
	"net"
	"net/url"
	"path/filepath"
	"strconv"
)

// CA returns the files of the cluster's certificate authority, which signs the
// identities a real node's kubelet and kube-proxy present (package node).
func (c *Cluster) CA() (certFile, keyFile string) {
	return filepath.Join(c.Dir, "pki", "ca.crt"), filepath.Join(c.Dir, "pki", "ca.key")
}

// BindAddress is where the API server listens (Options.BindAddress).
func (c *Cluster) BindAddress() string { return c.bindAddress }

// APIServerPort is the API server's secure port.
func (c *Cluster) APIServerPort() (int, error) {
	u, err := url.Parse(c.RESTConfig.Host)
	if err != nil {
		return 0, err
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}
