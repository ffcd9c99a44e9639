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
	"sort"
	"time"
)

// pki holds the files the components read: a CA that signs the API server's
// serving certificate and the admin's client certificate, the key pair that
// signs ServiceAccount tokens, and the front-proxy CA and client certificate
// with which the API server authenticates to extension API servers and
// webhooks that check request headers (KubeVirt's virt-api insists on the
// front-proxy CA in kube-system/extension-apiserver-authentication).
type pki struct {
	CACert, CAKey              string
	ServingCert, ServingKey    string
	SAKey, SAPub               string
	KubeletClientCert          string // the API server's identity towards kubelets
	KubeletClientKey           string
	FrontProxyCACert           string
	ProxyClientCert            string
	ProxyClientKey             string
	caPEM, adminCert, adminKey []byte // for the kubeconfig
	// clients are the components' own client certificates and keys, by
	// component (see componentUsers).
	clients map[string][2][]byte
}

// AdminUser is the admin kubeconfig's user (Kubeconfig, RESTConfig): the
// tests and kubectl. The audit log records only its requests on VMs.
const AdminUser = "vmctl-testcluster-admin"

// Doubles names the identity of the stand-ins that run in a test's own
// process (package doubles' kubelet): Cluster.DoublesConfig.
const Doubles = "doubles"

// componentUsers are the users that the components and the doubles
// authenticate as, each its own, so that the audit log tells their requests
// apart (kubeadm gives kube-controller-manager and kube-scheduler these
// names). Each is in system:masters, as the admin is: none has fewer rights
// than when they all shared the admin's certificate.
var componentUsers = map[string]string{
	KubeControllerManager: "system:kube-controller-manager",
	KubeScheduler:         "system:kube-scheduler",
	Kwok:                  "vmctl-testcluster-kwok",
	Doubles:               "vmctl-testcluster-doubles",
}

// serviceIP is the first address of the service range, the `kubernetes` Service.
const serviceIP = "10.96.0.1"

// frontProxyClientName is the front-proxy client certificate's common name,
// the one name --requestheader-allowed-names accepts.
const frontProxyClientName = "front-proxy-client"

// writePKI generates the certificates into dir. ECDSA keys keep it fast.
func writePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the pki directory: %w", err)
	}
	now := time.Now()
	ca, caKey, caDER, err := newCA("vmctl-testcluster-ca", now)
	if err != nil {
		return nil, err
	}
	frontProxyCA, frontProxyKey, frontProxyDER, err := newCA("vmctl-testcluster-front-proxy-ca", now)
	if err != nil {
		return nil, err
	}

	leaf := func(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, []byte, error) {
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
	servingCert, servingKey, err := leaf(ca, caKey, 2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceIP)})
	if err != nil {
		return nil, fmt.Errorf("generate the serving certificate: %w", err)
	}
	// system:masters bypasses RBAC, like kubeadm's admin.conf.
	adminCert, adminKey, err := leaf(ca, caKey, 3, pkix.Name{CommonName: AdminUser, Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the admin certificate: %w", err)
	}
	proxyCert, proxyKey, err := leaf(frontProxyCA, frontProxyKey, 2, pkix.Name{CommonName: frontProxyClientName}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the front-proxy client certificate: %w", err)
	}

	// For `kubectl logs` and `exec` on a real node (package node), as
	// kubeadm's apiserver-kubelet-client.
	kubeletClientCert, kubeletClientKey, err := leaf(ca, caKey, 4, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the kubelet client certificate: %w", err)
	}

	clients := map[string][2][]byte{}
	serial := int64(5)
	for _, component := range sortedComponents() {
		cert, key, err := leaf(ca, caKey, serial, pkix.Name{CommonName: componentUsers[component], Organization: []string{"system:masters"}},
			x509.ExtKeyUsageClientAuth, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("generate the client certificate of %s: %w", component, err)
		}
		clients[component] = [2][]byte{cert, key}
		serial++
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
		FrontProxyCACert: filepath.Join(dir, "front-proxy-ca.crt"),
		ProxyClientCert:  filepath.Join(dir, "front-proxy-client.crt"), ProxyClientKey: filepath.Join(dir, "front-proxy-client.key"),
		caPEM: certPEM(caDER), adminCert: adminCert, adminKey: adminKey,
		clients: clients,
	}
	for path, data := range map[string][]byte{
		p.CACert: p.caPEM, p.CAKey: caKeyPEM,
		p.ServingCert: servingCert, p.ServingKey: servingKey,
		p.SAKey: saKeyPEM, p.SAPub: saPubPEM,
		p.KubeletClientCert: kubeletClientCert, p.KubeletClientKey: kubeletClientKey,
		p.FrontProxyCACert: certPEM(frontProxyDER),
		p.ProxyClientCert:  proxyCert, p.ProxyClientKey: proxyKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return p, nil
}

// ComponentUser is the user a component (KubeControllerManager,
// KubeScheduler, Kwok or Doubles) authenticates as, as the API server's
// audit log names it. kube-controller-manager's controllers use their own
// ServiceAccounts in kube-system besides (--use-service-account-credentials).
func ComponentUser(component string) string { return componentUsers[component] }

// sortedComponents are componentUsers' keys in order, so that serial
// numbers do not depend on map order.
func sortedComponents() []string {
	names := make([]string, 0, len(componentUsers))
	for name := range componentUsers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// newCA makes a self-signed CA named cn.
func newCA(cn string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generate the key of %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sign %s: %w", cn, err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse %s: %w", cn, err)
	}
	return ca, key, der, nil
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
