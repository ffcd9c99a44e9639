package kubevirt

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Upgrade replaces k's release with to's on the same cluster, in the order
// virt-operator's update path takes (pkg/virt-operator/resource/apply,
// reconcile.go and update.go): the CRDs and RBAC first; then the node side,
// which here is the caller's virt-handler stand-in and has no release;
// then virt-controller; then virt-api, to which its webhooks and
// subresource API are pointed before the old one stops. Last, the KubeVirt
// CR says to.Version, as virt-operator records the release it deployed.
//
// Each component is replaced, not run beside the old one as a
// Deployment's surge would: one virt-controller leads at a time anyway,
// and the webhooks switch from one virt-api to the other in one update.
// Called with the older release, it is a rollback in the same order,
// which is not virt-operator's (createOrRollBackSystem starts virt-api
// first).
func (k *KubeVirt) Upgrade(ctx context.Context, to Binaries) error {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	from := k.Binaries.Version
	if err := k.cluster.ReplaceCRDs(ctx, []string{to.CRDs}); err != nil {
		return fmt.Errorf("replace KubeVirt's CRDs with %s's: %w", to.Version, err)
	}
	if err := k.applyRBAC(ctx, to.RBAC, testcluster.CreateOrReplace); err != nil {
		return fmt.Errorf("replace KubeVirt's RBAC with %s's: %w", to.Version, err)
	}
	k.logf("%s's CRDs and RBAC in place", to.Version)

	ports, err := testcluster.FreePorts(2)
	if err != nil {
		return err
	}
	launcherImage := k.launcherImageOverride
	if launcherImage == "" {
		launcherImage = to.LauncherImage()
	}
	startedAt := metav1.NowMicro()
	k.stopComponent(VirtController)
	ctrl, err := k.supervise(VirtController, to.VirtController,
		"--kubeconfig="+k.kubeconfigs[controllerServiceAccount],
		"--listen=127.0.0.1", "--port="+strconv.Itoa(ports[1]),
		"--launcher-image="+launcherImage)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "the new virt-controller to renew its Lease", ctrl, func(ctx context.Context) error {
		lease, err := k.admin.CoordinationV1().Leases(Namespace).Get(ctx, VirtController, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if r := lease.Spec.RenewTime; r == nil || r.Before(&startedAt) {
			return fmt.Errorf("the Lease was last renewed at %v, before the new virt-controller started", r)
		}
		return nil
	}); err != nil {
		return err
	}
	k.logf("virt-controller %s leading", to.Version)

	apiURL := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	oldAPI := k.component(VirtAPI)
	api, err := k.supervise(VirtAPI, to.VirtAPI,
		"--kubeconfig="+k.kubeconfigs[apiServiceAccount],
		"--listen=127.0.0.1", "--port="+strconv.Itoa(ports[0]),
		"--tls-cert-file="+k.certFile, "--tls-key-file="+k.keyFile)
	if err != nil {
		return err
	}
	if err := waitAPIHealthy(ctx, api, apiURL, k.caBundle); err != nil {
		return err
	}
	hooks, err := loadWebhooks(to.Webhooks, apiURL, k.caBundle)
	if err != nil {
		return err
	}
	if err := k.replaceWebhooks(ctx, hooks); err != nil {
		return err
	}
	if err := k.repointAPIServices(ctx, to.APIServices, ports[0]); err != nil {
		return err
	}
	k.stopProcess(oldAPI)
	if err := waitWebhookServes(ctx, api, k.admin); err != nil {
		return err
	}
	k.logf("virt-api %s serving at %s, its webhooks and subresource API pointed at it", to.Version, apiURL)

	k.mu.Lock()
	k.Binaries, k.APIURL = to, apiURL
	k.mu.Unlock()
	if err := k.markDeployed(ctx, to.Version); err != nil {
		return err
	}
	k.logf("KubeVirt %s replaced by %s in %s", from, to.Version, time.Since(begin).Round(time.Millisecond))
	return nil
}

// replaceWebhooks puts hooks in place of the configurations of the same
// names, each in one update: every request is sent to one virt-api or the
// other, never to none.
func (k *KubeVirt) replaceWebhooks(ctx context.Context, hooks webhooks) error {
	adm := k.admin.AdmissionregistrationV1()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := adm.ValidatingWebhookConfigurations().Get(ctx, hooks.validating.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hooks.validating.ResourceVersion = old.ResourceVersion
		_, err = adm.ValidatingWebhookConfigurations().Update(ctx, hooks.validating, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("replace %s: %w", hooks.validating.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := adm.MutatingWebhookConfigurations().Get(ctx, hooks.mutating.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hooks.mutating.ResourceVersion = old.ResourceVersion
		_, err = adm.MutatingWebhookConfigurations().Update(ctx, hooks.mutating, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("replace %s: %w", hooks.mutating.Name, err)
	}
	k.mu.Lock()
	k.webhooks = hooks
	k.mu.Unlock()
	return nil
}

// repointAPIServices points virt-api's Service and the APIServices of the
// manifest at path at port, trusted through k's CA bundle, and waits until
// the aggregator reports them Available.
func (k *KubeVirt) repointAPIServices(ctx context.Context, path string, port int) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := k.admin.CoreV1().Services(Namespace).Get(ctx, apiServiceName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Spec.Ports[0].Port = int32(port)
		_, err = k.admin.CoreV1().Services(Namespace).Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("point virt-api's Service at port %d: %w", port, err)
	}
	objs, err := readManifest(path)
	if err != nil {
		return err
	}
	var a apiServices
	for _, obj := range objs {
		if obj.GetKind() != "APIService" {
			continue
		}
		if err := unstructured.SetNestedField(obj.Object, int64(port), "spec", "service", "port"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(k.caBundle), "spec", "caBundle"); err != nil {
			return err
		}
		if err := testcluster.CreateOrReplace(ctx, k.dyn.Resource(apiServicesResource), obj); err != nil {
			return fmt.Errorf("point APIService %s at port %d: %w", obj.GetName(), port, err)
		}
		a.names = append(a.names, obj.GetName())
	}
	k.mu.Lock()
	for _, name := range a.names {
		if !slices.Contains(k.apis.names, name) {
			k.apis.names = append(k.apis.names, name)
		}
	}
	k.mu.Unlock()
	return a.waitAvailable(ctx, k.dyn)
}

// component is the running component of name, nil when there is none.
func (k *KubeVirt) component(name string) *supervised {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// stopComponent stops the running component of name, if any.
func (k *KubeVirt) stopComponent(name string) { k.stopProcess(k.component(name)) }

// stopProcess stops p and forgets it; nil is nothing.
func (k *KubeVirt) stopProcess(p *supervised) {
	if p == nil {
		return
	}
	p.stop()
	k.mu.Lock()
	k.procs = slices.DeleteFunc(k.procs, func(q *supervised) bool { return q == p })
	k.mu.Unlock()
}
