package kubevirt

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// apiServiceName is virt-api's Service, which KubeVirt's APIServices name.
const apiServiceName = "virt-api"

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServices are the APIServices of virt-api's subresource API
// (subresources.kubevirt.io: expand-spec, console, vnc, ...), as KubeVirt's
// own function builds them (Binaries.APIServices), registered with the API
// server's aggregator.
type apiServices struct {
	names []string
}

// installAPIServices registers virt-api's subresource API with the
// aggregator, as virt-operator does, but through a Service of type
// ExternalName that names localhost: kube-apiserver proxies to an
// ExternalName Service's name and port, so it reaches virt-api on loopback,
// where no kube-proxy runs and an EndpointSlice may not point. virt-api's
// certificate names the Service (<name>.<namespace>.svc), which the
// aggregator checks, and it authenticates the aggregator's requests by the
// front proxy's certificate, as a real cluster's virt-api does. It returns
// the APIServices it created, also when it fails part way.
func installAPIServices(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, path string, port int, caBundle []byte) (apiServices, error) {
	objs, err := readManifest(path)
	if err != nil {
		return apiServices{}, err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: apiServiceName, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(port)}},
		},
	}
	if _, err := cs.CoreV1().Services(Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return apiServices{}, fmt.Errorf("create virt-api's Service: %w", err)
	}
	var a apiServices
	for _, obj := range objs {
		if obj.GetKind() != "APIService" {
			continue
		}
		if err := unstructured.SetNestedField(obj.Object, int64(port), "spec", "service", "port"); err != nil {
			return a, err
		}
		if err := unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(caBundle), "spec", "caBundle"); err != nil {
			return a, err
		}
		ri := dyn.Resource(apiServicesResource)
		if err := ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return a, fmt.Errorf("remove an old APIService %s: %w", obj.GetName(), err)
		}
		if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return a, fmt.Errorf("create APIService %s: %w", obj.GetName(), err)
		}
		a.names = append(a.names, obj.GetName())
	}
	if len(a.names) == 0 {
		return a, fmt.Errorf("%s holds no APIService; remove the KubeVirt build directory and retry", path)
	}
	return a, nil
}

// waitAvailable waits until the aggregator reports every APIService
// Available: it reached virt-api and read its discovery.
func (a apiServices) waitAvailable(ctx context.Context, dyn dynamic.Interface) error {
	for _, name := range a.names {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			obj, err := dyn.Resource(apiServicesResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Available" {
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
					return m["status"] == "True", nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("APIService %s not available (%s): %w", name, last, err)
		}
	}
	return nil
}

// remove deletes the APIServices: a group whose server is gone would fail
// every client's discovery.
func (a apiServices) remove(ctx context.Context, dyn dynamic.Interface) error {
	var errs []error
	for _, name := range a.names {
		if err := dyn.Resource(apiServicesResource).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove APIService %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
