package fakeapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Factory is a kube.Factory over fake clientsets, for the commands' unit
// tests, as kubectl's cmdtesting.TestFactory is for kubectl's: kubectl's
// own flags, over a kubeconfig of the test's, so that -n, --context and
// --kubeconfig resolve as they do for users, and Clients gives the fakes.
// Bind the flags to the command's root, as kubectl-vmctl does:
//
//	f.AddFlags(root.PersistentFlags())
type Factory struct {
	*genericclioptions.ConfigFlags
	Kube     kubernetes.Interface
	KubeVirt kubevirt.Interface
	// Dynamic serves the revision stores: NewDynamic() unless a test sets
	// another.
	Dynamic dynamic.Interface
	// Expand stands in for KubeVirt's expand-spec: NoExpand unless a test
	// sets another.
	Expand kube.Expander
	// Metrics serves metrics.k8s.io: nil unless a test sets one.
	Metrics metricsclient.Interface
}

// NewFactory returns a Factory over kube and virt whose kubeconfig, in t's
// temporary directory, has two contexts: "test", the current one, in
// namespace, and "without-namespace". Its server is never asked.
func NewFactory(t testing.TB, namespace string, kube kubernetes.Interface, virt kubevirt.Interface) *Factory {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: test, user: {token: test}}]
contexts:
- {name: test, context: {cluster: test, user: test, namespace: "` + namespace + `"}}
- {name: without-namespace, context: {cluster: test, user: test}}
current-context: test
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	*flags.KubeConfig = path
	return &Factory{ConfigFlags: flags, Kube: kube, KubeVirt: virt, Dynamic: NewDynamic(), Expand: NoExpand}
}

// Clients returns the fakes.
func (f *Factory) Clients() (kube.Clients, error) {
	return kube.Clients{Kube: f.Kube, KubeVirt: f.KubeVirt, Dynamic: f.Dynamic, Expand: f.Expand, Metrics: f.Metrics}, nil
}

// NewDynamic is a fake dynamic client that serves the revision stores
// (VMRevisionStores), holding objs.
func NewDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{revision.StoreGVR: revision.StoreKind + "List"}, objs...)
}

// NoExpand stands in for KubeVirt's expand-spec subresource, which no
// fake clientset serves: a VM without an instancetype or preference comes
// back as it is, as from KubeVirt; one with either is an error, as from a
// cluster whose virt-api does not answer.
func NoExpand(_ context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return vm.DeepCopy(), nil
	}
	return nil, fmt.Errorf("expand the instancetype and preference of VM %s/%s: the fake API serves no subresources.kubevirt.io", vm.Namespace, vm.Name)
}
