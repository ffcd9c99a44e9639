package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// crdResource is the CustomResourceDefinition API. The dynamic client keeps the
// apiextensions clientset out of the product's module.
func crdResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
}

// installCRDs creates the CRDs in files with a plain create (they exceed the
// client-side apply annotation limit) and waits until they are Established.
func installCRDs(ctx context.Context, client dynamic.Interface, files []string) error {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		o, err := readObjects(f)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	// Validating a large CRD takes the API server a while; do them together.
	var wg sync.WaitGroup
	errs := make([]error, len(objs))
	names := make([]string, len(objs))
	for i, obj := range objs {
		names[i] = obj.GetName()
		wg.Go(func() {
			// The API server may still be starting: retry until it takes the
			// CRD or rejects it.
			var rejected error
			errs[i] = WaitFor(ctx, "CRD "+obj.GetName()+" to be created", nil, func(ctx context.Context) (bool, error) {
				_, err := client.Resource(crdResource()).Create(ctx, obj, metav1.CreateOptions{})
				switch {
				case err == nil || apierrors.IsAlreadyExists(err):
					return true, nil
				case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
					rejected = fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
					return true, nil
				}
				return false, err
			})
			if rejected != nil {
				errs[i] = rejected
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return waitEstablished(ctx, client, names)
}

// ReplaceCRDs replaces the cluster's CRDs of the names in files with
// theirs, creates those it lacks, and waits until all are Established: what
// an operator's upgrade does to its CRDs (a replacement, not an apply,
// which the CRDs' size rules out). CRDs files do not name stay.
func (c *Cluster) ReplaceCRDs(ctx context.Context, files []string) error {
	client, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	var names []string
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			names = append(names, obj.GetName())
			if err := CreateOrReplace(ctx, client.Resource(crdResource()), obj); err != nil {
				return fmt.Errorf("replace CRD %s: %w", obj.GetName(), err)
			}
		}
	}
	return waitEstablished(ctx, client, names)
}

// CreateOrReplace creates obj through ri, or replaces the object of its
// name with it, retrying when another write came between the read and
// the update.
func CreateOrReplace(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = ri.Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// waitEstablished waits until every CRD of names is Established.
func waitEstablished(ctx context.Context, client dynamic.Interface, names []string) error {
	return WaitFor(ctx, "the CRDs to be established", nil, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd, err := client.Resource(crdResource()).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !crdEstablished(crd) {
				return false, fmt.Errorf("CRD %s is not established yet", name)
			}
		}
		return true, nil
	})
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// readObjects decodes every YAML document in path.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// InstallVmctlCRD applies `kubectl-vmctl scaffold crd` with binary, as a
// cluster admin does once before the first fleet, and waits until the API
// server serves the revision stores, which every fleet's manifests hold one
// of.
func (c *Cluster) InstallVmctlCRD(ctx context.Context, binary string) error {
	const script = `"$0" scaffold crd | kubectl apply -f - &&
kubectl wait --for condition=established --timeout 60s crd/vmrevisionstores.vmctl.kubevirt.io`
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", script, binary)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl vmctl scaffold crd | kubectl apply -f -: %w: %s", err, out)
	}
	return nil
}
