package scaffold

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkPolicies is one request of each kind a fleet's Pods and VMs
// bring, sent through the API server's ValidatingAdmissionPolicy plugin
// holding all of a fleet's policies: the agent's own (judged by each
// policy's rules) and the far more of other components (kept out by each
// matching policy's match condition, for which the plugin converts a typed
// object, a Pod or an Event, to evaluate it). docs/benchmarks.md has the
// figures: `go test -run '^$' -bench BenchmarkPolicies ./internal/scaffold/`.
func BenchmarkPolicies(b *testing.B) {
	f := newFleet(b, reserving)
	api := newAPIServer(b, b, f.policies(b), nil)
	api.hold(b, namespace(f.p.Namespace), f.param(b))
	vm := f.deriveVM(b, f.pod, f.p.DeriveOptions())
	// As the API server decodes a custom resource: unstructured.
	raw, err := json.Marshal(vmi(vm))
	if err != nil {
		b.Fatal(err)
	}
	unstructuredVMI := &unstructured.Unstructured{}
	if err := unstructuredVMI.UnmarshalJSON(raw); err != nil {
		b.Fatal(err)
	}
	created, _ := agentEvents(b, f.pod)
	launcher := f.launcherPod(f.pod)
	for _, c := range []struct {
		name string
		r    request
	}{
		{"the agent creates its VM (create and guard policies)", create(f.own(b, nil))},
		{"the agent resizes its Pod (pod policy)", resize(f.agentPod(b, f.pod), shrink)},
		{"the agent nominates its launcher Pod (pod policy)", setStatus(launcher, nominateTo(f.pod.Node))},
		{"the agent records an Event (event policy)", create(created)},
		{"a kubelet updates a Pod's status (pod policy's match condition)", setStatus(launcher, func(p *corev1.Pod) { p.Status.Message = "x" }).as(personToken)},
		{"a controller records an Event (event policy's match condition)", create(created).as(personToken)},
		{"a controller updates a VMI (guard's match condition)", update(unstructuredVMI).as(personToken)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := api.admit(f, c.r, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
