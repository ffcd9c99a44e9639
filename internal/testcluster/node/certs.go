package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ca signs the node's identities with the cluster's certificate authority.
type ca struct {
	cert    *x509.Certificate
	certPEM []byte
	key     any
}

func loadCA(certFile, keyFile string) (*ca, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's CA: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("the cluster's CA files hold no PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse the cluster's CA key: %w", err)
	}
	return &ca{cert: cert, certPEM: certPEM, key: key}, nil
}

// issue signs a key pair for subject; with ips it is a serving certificate.
func (c *ca) issue(subject pkix.Name, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if len(ips) > 0 {
		usage = x509.ExtKeyUsageServerAuth
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// writeKubeconfig writes a kubeconfig for subject (a node or kube-proxy
// identity) against server.
func (c *ca) writeKubeconfig(path, server string, subject pkix.Name) error {
	cert, key, err := c.issue(subject, nil)
	if err != nil {
		return fmt.Errorf("issue a certificate for %s: %w", subject.CommonName, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.certPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "default"
	return clientcmd.WriteToFile(*cfg, path)
}

// writeServing writes the kubelet's serving key pair for the node's address
// into dir and returns the files.
func (c *ca) writeServing(dir string, ip net.IP) (certFile, keyFile string, err error) {
	cert, key, err := c.issue(pkix.Name{CommonName: "kubelet"}, []net.IP{ip})
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, key, 0o600)
}
