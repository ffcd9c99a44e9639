package testcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files the components read: a CA that signs the API server's
// serving certificate and the admin's client certificate, and the key pair that
// signs ServiceAccount tokens.
type pki struct {
	CACert, CAKey              string
	ServingCert, ServingKey    string
	SAKey, SAPub               string
	KubeletClientCert          string // the API server's identity towards kubelets
	KubeletClientKey           string
	caPEM, adminCert, adminKey []byte // for the kubeconfig
}

// serviceIP is the first address of the service range, the `kubernetes` Service.
const serviceIP = "10.96.0.1"

// writePKI generates the certificates into dir. ECDSA keys keep it fast.
func writePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the pki directory: %w", err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vmctl-testcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse the CA: %w", err)
	}

	leaf := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(365 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     dns,
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyPEM, err := ecKeyPEM(key)
		if err != nil {
			return nil, nil, err
		}
		return certPEM(der), keyPEM, nil
	}
	servingCert, servingKey, err := leaf(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceIP)})
	if err != nil {
		return nil, fmt.Errorf("generate the serving certificate: %w", err)
	}
	// system:masters bypasses RBAC, like kubeadm's admin.conf.
	adminCert, adminKey, err := leaf(3, pkix.Name{CommonName: "vmctl-testcluster-admin", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the admin certificate: %w", err)
	}

	// For `kubectl logs` and `exec` on a real node (package node), as
	// kubeadm's apiserver-kubelet-client.
	kubeletClientCert, kubeletClientKey, err := leaf(4, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the kubelet client certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the service-account key: %w", err)
	}
	saKeyPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubPEM, err := publicKeyPEM(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	caKeyPEM, err := ecKeyPEM(caKey)
	if err != nil {
		return nil, err
	}

	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
		KubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"), KubeletClientKey: filepath.Join(dir, "apiserver-kubelet-client.key"),
		caPEM: certPEM(caDER), adminCert: adminCert, adminKey: adminKey,
	}
	for path, data := range map[string][]byte{
		p.CACert: p.caPEM, p.CAKey: caKeyPEM,
		p.ServingCert: servingCert, p.ServingKey: servingKey,
		p.SAKey: saKeyPEM, p.SAPub: saPubPEM,
		p.KubeletClientCert: kubeletClientCert, p.KubeletClientKey: kubeletClientKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return p, nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func publicKeyPEM(key crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode a public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
