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

// Restart patches w's Pod template as ApplyRestart changes it (see
// restartPatch), with opts (a server dry run, the field manager), and
// returns the workload as the API server returns it.
func Restart(ctx context.Context, c kubernetes.Interface, w Workload, now time.Time, v Version, opts metav1.PatchOptions) (runtime.Object, error) {
	k, err := kindOf(w.Object)
	if err != nil {
		return nil, err
	}
	patch, err := restartPatch(k.spec(w.Object).template, now, v)
	if err != nil {
		return nil, err
	}
	return k.client(c, w.Meta().GetNamespace()).patch(ctx, w.Meta().GetName(), patch, opts)
}

// restartPatch is the strategic merge patch that restarts a workload whose
// Pod template is tmpl, as kubectl rollout restart's does, with the
// generation recorded beside it: what ApplyRestart changes.
func restartPatch(tmpl *corev1.PodTemplateSpec, now time.Time, v Version) ([]byte, error) {
	restarted := tmpl.DeepCopy()
	ApplyRestart(restarted, now, v)
	before, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(restarted)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("computing the restart's patch: %w", err)
	}
	return json.Marshal(map[string]any{"spec": map[string]json.RawMessage{"template": patch}})
}
