package metricsadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// fieldManager owns what Start applies.
const fieldManager = "vmctl-testcluster"

// applied is one object Start applied, to remove again.
type applied struct {
	resource  dynamic.ResourceInterface
	kind      string
	name      string
	namespace string
}

// loopback is m's objects as they serve an adapter on 127.0.0.1:port: the
// APIServices dial port, the Service is an ExternalName of localhost (no
// kube-proxy here: the aggregator resolves the name), and the Deployment
// is left out, its Pod being the process Start runs.
func loopback(m scaffold.MetricsAdapter, port int) []runtime.Object {
	var objs []runtime.Object
	for _, obj := range m.Objects() {
		switch o := obj.(type) {
		case *apiregistrationv1.APIService:
			o.Spec.Service.Port = ptr.To(int32(port))
		case *corev1.Service:
			o.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "https", Port: int32(port)}}}
		case *appsv1.Deployment:
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

// register applies loopback's objects, server-side, so that what a run
// killed earlier left behind is overwritten, recording each for Stop.
func (a *Adapter) register(ctx context.Context, m scaffold.MetricsAdapter, port int) error {
	for _, obj := range loopback(m, port) {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("convert %T: %w", obj, err)
		}
		u := &unstructured.Unstructured{Object: content}
		delete(u.Object, "status")
		gvk := u.GroupVersionKind()
		mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("find the resource of %s: %w", gvk, err)
		}
		var resource dynamic.ResourceInterface = a.dyn.Resource(mapping.Resource)
		if u.GetNamespace() != "" {
			resource = a.dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if err := a.apply(ctx, resource, u); err != nil {
			return err
		}
	}
	return nil
}

// apply applies u unless Stop began.
func (a *Adapter) apply(ctx context.Context, resource dynamic.ResourceInterface, u *unstructured.Unstructured) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errStopped
	}
	if _, err := resource.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	a.applied = append(a.applied, applied{resource: resource, kind: u.GetKind(), name: u.GetName(), namespace: u.GetNamespace()})
	return nil
}

// remove deletes objs: the APIServices first, as a group whose server is
// gone fails every client's discovery, then the rest, newest first.
func (a *Adapter) remove(ctx context.Context, objs []applied) error {
	objs = slices.Clone(objs)
	slices.Reverse(objs)
	var errs []error
	for _, apiServices := range []bool{true, false} {
		for _, o := range objs {
			if (o.kind == "APIService") != apiServices {
				continue
			}
			if err := o.resource.Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove %s %s: %w", o.kind, o.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// servingCert writes a self-signed certificate for the Service's name and
// loopback, and returns the files and the CA bundle the APIServices trust.
func servingCert(dir, namespace string) (certFile, keyFile string, caBundle []byte, err error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{scaffold.AdapterName + "." + namespace + ".svc"})
	if err != nil {
		return "", "", nil, fmt.Errorf("generate the adapter's certificate: %w", err)
	}
	// The file holds the serving certificate, then its CA.
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil || len(certs) < 2 {
		return "", "", nil, fmt.Errorf("parse the adapter's certificate chain (%d certificates): %w", len(certs), err)
	}
	if caBundle, err = cert.EncodeCertificates(certs[len(certs)-1]); err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return "", "", nil, fmt.Errorf("write the adapter's certificate: %w", err)
		}
	}
	return certFile, keyFile, caBundle, nil
}

var apiServicesResource = schema.GroupVersionResource{Group: apiregistrationv1.GroupName, Version: "v1", Resource: "apiservices"}

// waitReady waits until the adapter's /readyz passes: in a cluster the
// readiness probe of scaffold's Pod keeps it out of its Service until
// then, and this Service (loopback's ExternalName) has no such gate.
func (a *Adapter) waitReady(ctx context.Context, caBundle []byte) error {
	client, err := rest.HTTPClientFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: caBundle}})
	if err != nil {
		return fmt.Errorf("create a client for the adapter's /readyz: %w", err)
	}
	url := a.url + "/readyz"
	return testcluster.WaitFor(ctx, "the adapter's /readyz to pass", []*testcluster.Process{a.Process()}, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			return false, fmt.Errorf("%s: %s", resp.Status, body)
		}
		return true, nil
	})
}

// APIServices are the names of the APIServices scaffold registers for
// the adapter, v1beta2's and v1beta1's.
var APIServices = []string{"v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io"}

// waitAvailable waits until the aggregator reports both APIServices
// Available: it reached the adapter and read its discovery.
func (a *Adapter) waitAvailable(ctx context.Context) error {
	names := APIServices
	return testcluster.WaitFor(ctx, "custom.metrics.k8s.io to be Available", []*testcluster.Process{a.Process()}, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			obj, err := a.dyn.Resource(apiServicesResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if err := available(obj); err != nil {
				return false, fmt.Errorf("%s: %w", name, err)
			}
		}
		return true, nil
	})
}

// available is nil when obj, an APIService, is Available, and otherwise
// says why not.
func available(obj *unstructured.Unstructured) error {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("%v: %v", m["reason"], m["message"])
		}
	}
	return errors.New("no Available condition yet")
}
