package kubevirt

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// webhooks are virt-api's two webhook configurations.
type webhooks struct {
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
}

// loadWebhooks reads the configurations KubeVirt's own functions built
// (Binaries.Webhooks) and points every webhook at virt-api on loopback: each
// Service reference becomes url https://127.0.0.1:<port><its path>, trusted
// through caBundle.
func loadWebhooks(path, apiURL string, caBundle []byte) (webhooks, error) {
	objs, err := readManifest(path)
	if err != nil {
		return webhooks{}, err
	}
	var w webhooks
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ValidatingWebhookConfiguration":
			w.validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, w.validating); err != nil {
				return webhooks{}, fmt.Errorf("decode %s: %w", obj.GetName(), err)
			}
			for i := range w.validating.Webhooks {
				if err := toLoopback(&w.validating.Webhooks[i].ClientConfig, apiURL, caBundle); err != nil {
					return webhooks{}, fmt.Errorf("webhook %s: %w", w.validating.Webhooks[i].Name, err)
				}
			}
		case "MutatingWebhookConfiguration":
			w.mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, w.mutating); err != nil {
				return webhooks{}, fmt.Errorf("decode %s: %w", obj.GetName(), err)
			}
			for i := range w.mutating.Webhooks {
				if err := toLoopback(&w.mutating.Webhooks[i].ClientConfig, apiURL, caBundle); err != nil {
					return webhooks{}, fmt.Errorf("webhook %s: %w", w.mutating.Webhooks[i].Name, err)
				}
			}
		}
	}
	if w.validating == nil || w.mutating == nil {
		return webhooks{}, fmt.Errorf("%s lacks virt-api's validating or mutating webhook configuration; remove the KubeVirt build directory and retry", path)
	}
	return w, nil
}

// toLoopback turns a Service reference into a URL on apiURL.
func toLoopback(cc *admissionregistrationv1.WebhookClientConfig, apiURL string, caBundle []byte) error {
	if cc.Service == nil || cc.Service.Path == nil {
		return errors.New("no service path to point at virt-api")
	}
	url := apiURL + *cc.Service.Path
	cc.Service, cc.URL, cc.CABundle = nil, &url, caBundle
	return nil
}

// install creates both configurations, replacing leftovers of the same name.
func (w webhooks) install(ctx context.Context, cs kubernetes.Interface) error {
	adm := cs.AdmissionregistrationV1()
	if err := adm.ValidatingWebhookConfigurations().Delete(ctx, w.validating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove an old %s: %w", w.validating.Name, err)
	}
	if err := adm.MutatingWebhookConfigurations().Delete(ctx, w.mutating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove an old %s: %w", w.mutating.Name, err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, w.validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", w.validating.Name, err)
	}
	if _, err := adm.MutatingWebhookConfigurations().Create(ctx, w.mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", w.mutating.Name, err)
	}
	return nil
}

// remove deletes both configurations; ones already gone are fine.
func (w webhooks) remove(ctx context.Context, cs kubernetes.Interface) error {
	adm := cs.AdmissionregistrationV1()
	var errs []error
	if err := adm.ValidatingWebhookConfigurations().Delete(ctx, w.validating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove %s: %w", w.validating.Name, err))
	}
	if err := adm.MutatingWebhookConfigurations().Delete(ctx, w.mutating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove %s: %w", w.mutating.Name, err))
	}
	return errors.Join(errs...)
}
