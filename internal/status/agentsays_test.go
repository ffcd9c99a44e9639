package status

import (
	"context"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// markers is what the agent's InvalidPrototype Event says of a prototype
// copied from a derived VM.
const markers = "prototype ns/web carries vmctl's derived-VM markers (label vmctl.kubevirt.io/pod), as a copy of a derived VM does; " +
	"remove them so that gc and status do not take it for a derived VM: kubectl label vm web -n ns vmctl.kubevirt.io/pod-"

// agentEvent is a Warning Event the agent of the Pod ns/pod (uid) records,
// last seen age ago, as client-go's recorder names it.
func agentEvent(ns, pod, uid, reason, msg string, age time.Duration, mods ...func(*corev1.Event)) *corev1.Event {
	at := ago(age)
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: pod + ".18" + at.Format("150405"), CreationTimestamp: at},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod, UID: types.UID(uid)},
		Reason:         reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: contract.EventComponent, Host: "n1"},
		FirstTimestamp: at, LastTimestamp: at,
	}
	for _, m := range mods {
		m(e)
	}
	return e
}

// TestPairAgentSays: a Pod without VM shows its agent's latest Warning of
// its own reasons at once, before MissingGrace is out; other Events, and
// Events of another Pod of the same name, say nothing of it.
func TestPairAgentSays(t *testing.T) {
	young, old := 2*time.Second, time.Hour
	invalid := agentEvent("ns", "a", "uid-a", "InvalidPrototype", markers, time.Minute)
	missing := "VM missing: InvalidPrototype: " + markers
	tests := []struct {
		name   string
		podAge time.Duration
		mods   []func(*corev1.Pod)
		events []*corev1.Event
		want   []string
	}{{
		name: "the agent's Event, before MissingGrace is out", podAge: young,
		events: []*corev1.Event{invalid},
		want:   []string{missing},
	}, {
		name: "no Event, within MissingGrace", podAge: young,
	}, {
		name: "no Event, past MissingGrace", podAge: old,
		want: []string{ProblemVMMissing},
	}, {
		name: "the latest of the agent's Warnings", podAge: old,
		events: []*corev1.Event{
			agentEvent("ns", "a", "uid-a", "RevisionUnavailable", "reading VM revision abc from VMRevisionStore ns/web: forbidden", 2*time.Minute),
			invalid,
			agentEvent("ns", "a", "uid-a", "CreateFailed", "older", 3*time.Minute),
		},
		want: []string{missing},
	}, {
		name: "in the same second, the later name", podAge: old,
		events: []*corev1.Event{
			agentEvent("ns", "a", "uid-a", "CreateFailed", "first", time.Minute, func(e *corev1.Event) { e.Name = "a.18a0000000000001" }),
			agentEvent("ns", "a", "uid-a", "VMConflict", "second", time.Minute, func(e *corev1.Event) { e.Name = "a.18a0000000000002" }),
		},
		want: []string{"VM missing: VMConflict: second"},
	}, {
		name: "a stuck state's Event says its own words", podAge: old, mods: []func(*corev1.Pod){pinning("1a2b3c4d5e")},
		events: []*corev1.Event{agentEvent("ns", "a", "uid-a", stuck.ReasonRevisionMissing, stuck.RevisionMissing+": revision 1a2b3c4d5e is not in VMRevisionStore ns/web-vm-revisions", time.Minute)},
		want:   []string{stuck.RevisionMissing + ": revision 1a2b3c4d5e is not in VMRevisionStore ns/web-vm-revisions"},
	}, {
		name: "another component's Warning, of a reason the agent has", podAge: young,
		events: []*corev1.Event{agentEvent("ns", "a", "uid-a", "InvalidPrototype", "forged", time.Minute, func(e *corev1.Event) { e.Source.Component = "kubelet" })},
	}, {
		name: "a reason the agent does not have", podAge: young,
		events: []*corev1.Event{agentEvent("ns", "a", "uid-a", "BackOff", "Back-off restarting failed container", time.Minute)},
	}, {
		name: "a Normal Event", podAge: young,
		events: []*corev1.Event{agentEvent("ns", "a", "uid-a", "VMDeleted", "Deleted VM", time.Minute, func(e *corev1.Event) { e.Type = corev1.EventTypeNormal })},
	}, {
		name: "the Event of the Pod's predecessor of the same name", podAge: young,
		events: []*corev1.Event{agentEvent("ns", "a", "uid-old", "InvalidPrototype", markers, time.Minute)},
	}, {
		name: "a Pod on its way out", podAge: old, mods: []func(*corev1.Pod){func(p *corev1.Pod) { p.DeletionTimestamp = ptrTime(ago(time.Second)) }},
		events: []*corev1.Event{invalid},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := Inventory{
				Query:      Query{Namespace: "ns"},
				Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", tt.podAge, tt.mods...)),
				Prototypes: ptrs(protoVM("ns", "web", 1)),
				Events:     tt.events,
			}
			rows := Pair(&inv, t0, NotReadyGrace)
			if len(rows) != 1 {
				t.Fatalf("%d rows, want 1: %v", len(rows), briefs(rows))
			}
			if diff := gocmp.Diff(tt.want, rows[0].Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}

	// A Pod that has its VM: the Event is history.
	inv := Inventory{
		Query:      Query{Namespace: "ns"},
		Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", old)),
		Prototypes: ptrs(protoVM("ns", "web", 1)),
		VMs:        ptrs(derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", old)),
		Events:     []*corev1.Event{invalid},
	}
	if rows := Pair(&inv, t0, NotReadyGrace); len(rows) != 1 || len(rows[0].Problems) != 0 {
		t.Errorf("a Pod with its VM: rows %v, want one without problems", briefs(rows))
	}
}

// TestLoadReadsAgentEvents: where an agent Pod lacks its VM, Load makes one
// LIST more, of the agents' Warning Events of the namespace, after the
// rest; status then shows what the agent said. Where every Pod has its VM,
// it lists no Events (TestLoad).
func TestLoadReadsAgentEvents(t *testing.T) {
	a := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)
	b := agentPod("ns", "b", "uid-b", "n1", "web", 2*time.Second)
	proto, vm := protoVM("ns", "web", 1), derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
	kc, virt := fakes([]runtime.Object{&a, &b,
		agentEvent("ns", "b", "uid-b", "InvalidPrototype", markers, time.Second),
		agentEvent("ns", "a", "uid-a", "CreateFailed", "the API server was away", time.Hour),
	}, []runtime.Object{&proto, &vm})
	log := record(&kc.Fake, &virt.Fake)
	inv, err := Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores()}, Query{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	got := calls(*log)
	last := got[len(got)-1]
	if want := (call{"list", "events", "ns", "", agentEvents}); last != want {
		t.Errorf("last call %+v, want %+v", last, want)
	}
	n := 0
	for _, c := range got {
		if c.Resource == "events" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d LISTs of Events, want 1: %v", n, got)
	}
	want := []brief{
		{Namespace: "ns", Pod: "a", VM: "web-a"},
		{Namespace: "ns", Pod: "b", Problems: []string{"VM missing: InvalidPrototype: " + markers}},
	}
	if diff := gocmp.Diff(want, briefs(Pair(inv, t0, NotReadyGrace))); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestWatchFollowsAgentEvents: status --watch follows the agents' Warning
// Events once a Pod lacks its VM, and shows what the agent said as it
// says it.
func TestWatchFollowsAgentEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", 2*time.Second)
	proto := protoVM("ns", "web", 1)
	kc, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&proto})
	created := false
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: 10 * time.Millisecond}, func(inv *Inventory) error {
		rows := Pair(inv, t0, NotReadyGrace)
		if len(rows) == 1 && gocmp.Equal(rows[0].Problems, []string{"VM missing: InvalidPrototype: " + markers}) {
			cancel()
			return nil
		}
		// The fake tracker does not replay what happened between list
		// and watch: the Event comes once its watch is open.
		if !created && watchOpen(kc.Actions(), "events") {
			created = true
			e := agentEvent("ns", "a", "uid-a", "InvalidPrototype", markers, time.Second)
			if _, err := kc.CoreV1().Events("ns").Create(ctx, e, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !created || ctx.Err() != context.Canceled || t.Context().Err() != nil {
		t.Fatal("Watch never showed what the agent said")
	}
}

// watchOpen reports whether acts hold a WATCH of resource.
func watchOpen(acts []k8stesting.Action, resource string) bool {
	return slices.ContainsFunc(acts, func(a k8stesting.Action) bool {
		return a.GetVerb() == "watch" && a.GetResource().Resource == resource
	})
}
