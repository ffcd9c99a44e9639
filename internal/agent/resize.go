package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// ReasonResizeFailed is the agent's Event, and /readyz's reason, when it
// cannot resize its Pod to its own requests to give back the room it held
// for its VM: it makes no VM until it can.
const ReasonResizeFailed = "ResizeFailed"

// RequestsFromEnv reads the container's requests now from contract.EnvRequestsCPU
// and EnvRequestsMemory; nil when neither is set.
func RequestsFromEnv(lookup func(string) (string, bool)) (corev1.ResourceList, error) {
	var out corev1.ResourceList
	for _, v := range []struct {
		env    string
		name   corev1.ResourceName
		suffix string
	}{{contract.EnvRequestsCPU, corev1.ResourceCPU, "m"}, {contract.EnvRequestsMemory, corev1.ResourceMemory, ""}} {
		s, ok := lookup(v.env)
		if s = strings.TrimSpace(s); !ok || s == "" {
			continue
		}
		q, err := resource.ParseQuantity(s + v.suffix)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", v.env, s, err)
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[v.name] = q
	}
	return out, nil
}

// holdsReservation reports whether the container asks for more than its
// own requests, so it must hand the room over to its VM's launcher Pod.
// Without its own requests (an agent scaffolded without a reservation) it
// never does; without its requests now (no downward-API env) it assumes it
// does.
func (c Config) holdsReservation() bool {
	if len(c.OwnRequests) == 0 {
		return false
	}
	if c.Requests == nil {
		return true
	}
	for name, own := range c.OwnRequests {
		if now, ok := c.Requests[name]; ok && now.Cmp(own) > 0 {
			return true
		}
	}
	return false
}

// heldReservation is the room the Pod's template holds for the VM, as
// contract.FormatResources writes it: Reservation, or else, while the Pod
// still holds it, its requests beyond the agent's own; "" when unknown.
func (c Config) heldReservation() string {
	if c.Reservation != "" || !c.holdsReservation() || c.Requests == nil {
		return c.Reservation
	}
	held := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q := c.Requests[name].DeepCopy()
		q.Sub(c.OwnRequests[name])
		held[name] = q
	}
	return contract.FormatResources(held)
}

// resizePatch is the strategic merge patch of pods/resize that sets the
// agent container's requests and limits to its own.
func (c Config) resizePatch() ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name":      contract.ContainerName,
		"resources": corev1.ResourceRequirements{Requests: c.OwnRequests, Limits: c.OwnLimits},
	}}}})
}

// giveBack resizes the Pod to the agent's own requests and limits, once,
// when it still holds its VM's room: the VM's launcher Pod gets that room
// on this node. One PATCH of pods/resize; none when the room was given back
// before (by this process, or before a restart).
func (a *Agent) giveBack(ctx context.Context) *problem {
	if !a.holdsRoom() {
		return nil
	}
	patch, err := a.cfg.resizePatch()
	if err != nil {
		return &problem{reason: ReasonResizeFailed, msg: err.Error(), err: err}
	}
	ref := a.pod.PodNamespace + "/" + a.pod.PodName
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := a.pods.resize(rctx, a.pod.PodNamespace, a.pod.PodName, patch); err != nil {
		p := &problem{reason: ReasonResizeFailed, err: err, msg: fmt.Sprintf(
			"resizing Pod %s to its own requests (%s) to give back the room it holds for its VM, whose launcher Pod waits for it: %v",
			ref, contract.FormatResources(a.cfg.OwnRequests), err)}
		if apierrors.IsNotFound(err) {
			p.msg += "; unless the Pod is going, the API server lacks pods/resize (Kubernetes 1.35 and later have it): scaffold again with --reserve=false"
		} else {
			p.msg += deniedHint(err, "patch on pods/resize")
		}
		return p
	}
	a.resized.Store(true)
	klog.FromContext(ctx).Info("Gave back the room held for the VM", "pod", ref, "requests", contract.FormatResources(a.cfg.OwnRequests))
	return nil
}
