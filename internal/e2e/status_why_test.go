//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// TestStatusSaysWhyAVMIsMissing is issue 63's case: a prototype copied
// from a derived VM, with vmctl's markers. scaffold refuses it, as its
// agents would, and says which markers to remove. An agent Pod that pins
// a revision of it all the same (the prototype marked after scaffold,
// then rolled out) makes no VM, and status shows its agent's
// InvalidPrototype Event, reason and message, as soon as the agent
// records it, with and without -A: not an empty PROBLEM for
// status.MissingGrace, then a bare "VM missing".
func TestStatusSaysWhyAVMIsMissing(t *testing.T) {
	ns := namespace(t)
	createPrototypeWith(t, ns, "testvm.yaml", copiedFromDerived)
	out, stderr, code := vmctlCode(t, "scaffold", "deployment", "testvm", "-n", ns)
	if code != 1 || out != "" || !strings.Contains(stderr, "scaffold pins no revision its agents would refuse: prototype "+ns+"/testvm carries vmctl's derived-VM markers") ||
		!strings.Contains(stderr, "kubectl label vm testvm -n "+ns) {
		t.Errorf("scaffold of a marked prototype: exit %d, stdout %d bytes, stderr %q; want exit 1, nothing printed, the markers and how to remove them", code, len(out), stderr)
	}
	if err := e.virt.KubevirtV1().VirtualMachines(ns).Delete(t.Context(), "testvm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the marked prototype gone", func(ctx context.Context) (bool, string, error) {
		_, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, "testvm", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err), nil
	})

	deployMarked(t, ns)
	pod := waitWarningEvent(t, ns, "the InvalidPrototype Event", func(msg string) bool { return strings.Contains(msg, "derived-VM markers") })
	event := latestAgentWarning(t, ns, pod.Name)
	want := []string{"VM missing: " + event.Reason + ": " + event.Message}
	if event.Reason != "InvalidPrototype" {
		t.Fatalf("the agent's latest Warning is %s: %s; want InvalidPrototype", event.Reason, event.Message)
	}
	// The first status after the Event shows it: no poll.
	for _, args := range [][]string{{"-n", ns}, {"-A"}} {
		t.Logf("status %v at Pod age %v", args, time.Since(pod.CreationTimestamp.Time).Round(100*time.Millisecond))
		got := statusProblems(t, pod.Name, args...)
		if !slices.Equal(got, want) {
			t.Errorf("status %v: Pod %s's problems %q; want %q", args, pod.Name, got, want)
		}
	}
	// The agent said it within seconds of its start; status shows it
	// from then on, before MissingGrace would have run out.
	started := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	took := event.LastTimestamp.Sub(started)
	t.Logf("the agent's Event %v after its Pod started", took)
	if took >= status.MissingGrace {
		t.Errorf("the agent's Event came %v after its Pod started; status shows it from then, want that within %v", took, status.MissingGrace)
	}
}

// latestAgentWarning is the latest Warning Event of the agent of Pod
// ns/pod.
func latestAgentWarning(t *testing.T, ns, pod string) corev1.Event {
	t.Helper()
	list, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "type": corev1.EventTypeWarning, "source": "vmctl-agent"}.String(),
	})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("the agent's Warning Events of %s/%s: %v, %d found", ns, pod, err, len(list.Items))
	}
	latest := list.Items[0]
	for _, ev := range list.Items[1:] {
		if ev.LastTimestamp.After(latest.LastTimestamp.Time) {
			latest = ev
		}
	}
	return latest
}

// statusProblems runs status -o json with args and returns the problems
// of Pod pod's row.
func statusProblems(t *testing.T, pod string, args ...string) []string {
	t.Helper()
	out := vmctl(t, append([]string{"status", "-o", "json"}, args...)...)
	var list struct {
		Items []status.Row `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("status %v -o json: %v\n%s", args, err, out)
	}
	for _, r := range list.Items {
		if r.Pod == pod {
			return r.Problems
		}
	}
	t.Fatalf("status %v: no row of Pod %s in %s", args, pod, out)
	return nil
}
