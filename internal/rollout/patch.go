package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

// Restartable says why w cannot be restarted now, if it cannot: a
// Deployment whose rollout is paused, or an object of no workload kind.
func Restartable(w Workload) error {
	k, err := kindOf(w.Object)
	if err != nil {
		return err
	}
	if k.paused(w.Object) {
		return fmt.Errorf("%s is paused: run kubectl rollout resume %s/%s -n %s first",
			w, k.singular(), w.Meta().GetName(), w.Meta().GetNamespace())
	}
	return nil
}

// FieldManager owns the fields rollout restart sets.
const FieldManager = "kubectl-vmctl-rollout"

// Restart patches w as Restarted changes it (see restartPatch), with opts
// (a server dry run), and returns the workload as the API server returns
// it.
func Restart(ctx context.Context, c kubernetes.Interface, w Workload, now time.Time, t Target, opts metav1.PatchOptions) (runtime.Object, error) {
	k, err := kindOf(w.Object)
	if err != nil {
		return nil, err
	}
	patch, err := restartPatch(w, now, t)
	if err != nil {
		return nil, err
	}
	opts.FieldManager = FieldManager
	return k.client(c, w.Meta().GetNamespace()).patch(ctx, w.Meta().GetName(), patch, opts)
}

// Restarted is a copy of w as a restart at now to t leaves it: its Pod
// template pins t (ApplyRestart), and its change-cause, which `kubectl
// rollout history` shows for the revision the restart makes, names t.
func Restarted(w Workload, now time.Time, t Target) Workload {
	w.Object = w.Object.DeepCopyObject()
	ApplyRestart(w.Template(), w.Meta().GetName(), now, t)
	a := w.Meta().GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[podtemplate.AnnotationChangeCause] = podtemplate.ChangeCause(t.Snapshot, t.Hash)
	w.Meta().SetAnnotations(a)
	return w
}

// restartPatch is the strategic merge patch that turns w into
// Restarted(w, now, t): the Pod template's changes, as kubectl rollout
// restart's patch has them, and the change-cause.
func restartPatch(w Workload, now time.Time, t Target) ([]byte, error) {
	restarted := Restarted(w, now, t)
	before, err := json.Marshal(w.Template())
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(restarted.Template())
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("computing the restart's patch: %w", err)
	}
	cause := restarted.Meta().GetAnnotations()[podtemplate.AnnotationChangeCause]
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{podtemplate.AnnotationChangeCause: cause}},
		"spec":     map[string]json.RawMessage{"template": patch},
	})
}
