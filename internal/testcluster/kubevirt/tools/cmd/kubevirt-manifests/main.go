// Command kubevirt-manifests prints, as multi-document YAML, what KubeVirt's
// virt-operator would install for virt-api and virt-controller, built by
// KubeVirt's own functions of the version this module pins:
//
//	kubevirt-manifests crds      every KubeVirt CRD (components.New...Crd)
//	kubevirt-manifests rbac      ServiceAccounts, Roles and bindings (rbac.GetAll...)
//	kubevirt-manifests webhooks  virt-api's validating and mutating webhook configurations
//	kubevirt-manifests apiservices  the APIServices of virt-api's subresource API
//	kubevirt-manifests handler   virt-handler's DaemonSet and the PriorityClass it runs at
//
// The handler's images are KubeVirt's own names for the module's version,
// quay.io/kubevirt/virt-handler and virt-launcher.
//
// The webhooks point at virt-api's Service, as virt-operator installs them;
// the test harness (internal/testcluster/kubevirt) points them at virt-api on
// loopback instead.
//
// It builds against the module's go.mod (the newest KubeVirt the harness
// runs) and, with -tags kubevirt_v1_8 or kubevirt_v1_7, against
// kubevirt-v1.8.0.mod or kubevirt-v1.7.0.mod; the functions whose
// signatures or lists differ live in kubevirt_*.go.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// namespace is where KubeVirt runs, as in a default install.
const namespace = "kubevirt"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubevirt-manifests crds|rbac|webhooks|apiservices|handler")
		os.Exit(2)
	}
	objs, err := manifests(os.Args[1])
	if err == nil {
		err = printYAML(objs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-manifests:", err)
		os.Exit(1)
	}
}

func manifests(what string) ([]runtime.Object, error) {
	switch what {
	case "crds":
		return crds()
	case "rbac":
		var objs []runtime.Object
		objs = append(objs, rbac.GetAllCluster()...)
		objs = append(objs, rbac.GetAllApiServer(namespace)...)
		objs = append(objs, controllerRBAC(namespace)...)
		objs = append(objs, rbac.GetAllHandler(namespace)...)
		return objs, nil
	case "webhooks":
		return []runtime.Object{
			components.NewVirtAPIValidatingWebhookConfiguration(namespace),
			components.NewVirtAPIMutatingWebhookConfiguration(namespace),
		}, nil
	case "apiservices":
		var objs []runtime.Object
		for _, a := range components.NewVirtAPIAPIServices(namespace) {
			objs = append(objs, a)
		}
		return objs, nil
	case "handler":
		version, err := kubevirtVersion()
		if err != nil {
			return nil, err
		}
		return []runtime.Object{components.NewKubeVirtPriorityClassCR(), handlerDaemonSet(version)}, nil
	}
	return nil, fmt.Errorf("unknown manifest set %q: want crds, rbac, webhooks, apiservices or handler", what)
}

// crds lists the KubeVirt CRD, which KubeVirt's install manifests create with
// virt-operator, and then the CRDs of virt-operator's
// install.GenerateCurrentInstallStrategy, in its order: those every release
// has, then the release's own.
func crds() ([]runtime.Object, error) {
	var objs []runtime.Object
	all := append([]func() (*extv1.CustomResourceDefinition, error){components.NewKubeVirtCrd}, installCRDs...)
	for _, f := range append(all, releaseCRDs...) {
		crd, err := f()
		if err != nil {
			return nil, err
		}
		objs = append(objs, crd)
	}
	return objs, nil
}

// installCRDs are the install strategy's CRDs in every release the module
// builds (v1.7.0 and later).
var installCRDs = []func() (*extv1.CustomResourceDefinition, error){
	components.NewVirtualMachineInstanceCrd, components.NewPresetCrd, components.NewReplicaSetCrd,
	components.NewVirtualMachineCrd, components.NewVirtualMachineInstanceMigrationCrd,
	components.NewVirtualMachineSnapshotCrd, components.NewVirtualMachineSnapshotContentCrd,
	components.NewVirtualMachineRestoreCrd, components.NewVirtualMachineInstancetypeCrd,
	components.NewVirtualMachineClusterInstancetypeCrd, components.NewVirtualMachinePoolCrd,
	components.NewMigrationPolicyCrd, components.NewVirtualMachinePreferenceCrd,
	components.NewVirtualMachineClusterPreferenceCrd, components.NewVirtualMachineExportCrd,
	components.NewVirtualMachineCloneCrd,
}

// registry is where KubeVirt publishes its images.
const registry = "quay.io/kubevirt"

// kubevirtVersion is the version of kubevirt.io/kubevirt this command was
// built with: the handler's images carry it as their tag.
func kubevirtVersion() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", fmt.Errorf("no build information: build with module support")
	}
	for _, dep := range info.Deps {
		if dep.Path == "kubevirt.io/kubevirt" {
			return dep.Version, nil
		}
	}
	return "", fmt.Errorf("built without kubevirt.io/kubevirt")
}

func printYAML(objs []runtime.Object) error {
	for _, obj := range objs {
		if obj.GetObjectKind().GroupVersionKind().Kind == "" {
			return fmt.Errorf("%T has no apiVersion and kind", obj)
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if _, err := fmt.Printf("---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
