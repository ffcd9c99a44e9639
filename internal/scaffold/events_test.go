package scaffold

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// sink keeps what client-go's recorder writes: each Event created, and each
// patched as it is after the patch.
type sink struct {
	created, patched chan *corev1.Event
}

func (s sink) Create(e *corev1.Event) (*corev1.Event, error) {
	e = e.DeepCopy()
	e.UID, e.ResourceVersion = "uid-event", "1"
	s.created <- e
	return e, nil
}
func (s sink) Update(e *corev1.Event) (*corev1.Event, error) { return e, nil }
func (s sink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.patched <- e.DeepCopy()
	return e, nil
}

// agentEvents are the Events the agent of pod records, as client-go's
// recorder writes them with the agent's source and subject: one created,
// and the same recorded again, which the recorder counts by a patch.
func agentEvents(t testing.TB, pod derive.Pod) (created, patched *corev1.Event) {
	t.Helper()
	id := agent.Identity{PodName: pod.Name, PodNamespace: pod.Namespace, PodUID: pod.UID, Node: pod.Node}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := record.NewBroadcaster(record.WithContext(ctx))
	s := sink{created: make(chan *corev1.Event, 1), patched: make(chan *corev1.Event, 1)}
	b.StartRecordingToSink(s)
	r := b.NewRecorder(scheme.Scheme, agent.EventSource(id))
	next := func(c chan *corev1.Event) *corev1.Event {
		r.Event(agent.EventSubject(id), corev1.EventTypeWarning, agent.ReasonCreateFailed, "creating VM: refused")
		select {
		case e := <-c:
			e.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("the recorder wrote no Event")
			return nil
		}
	}
	return next(s.created), next(s.patched)
}

// TestAgentEventsAdmitted: the Events an agent records through client-go's
// recorder, created and patched, are what the event policy admits, and
// anything else is not.
func TestAgentEventsAdmitted(t *testing.T) {
	f := newFleet(t, nil)
	c := newCluster(t, t, f)
	own, ownPatched := agentEvents(t, f.pod)
	elsewhere := f.other
	elsewhere.Node = "node-2"
	others, _ := agentEvents(t, elsewhere)
	scheduler := others.DeepCopy()
	scheduler.Source, scheduler.ReportingController, scheduler.ReportingInstance = corev1.EventSource{Component: "default-scheduler"}, "default-scheduler", "scheduler-1"
	scheduler.Reason, scheduler.Message = "FailedScheduling", "0/3 nodes are available"
	changed := func(e *corev1.Event, change func(*corev1.Event)) *corev1.Event {
		e = e.DeepCopy()
		change(e)
		return e
	}
	patch := func(old, changed *corev1.Event) request {
		return request{op: "UPDATE", object: changed, oldObject: old}
	}

	tests := []struct {
		name   string
		try    request
		refuse []string
	}{
		{name: "create an Event about its own Pod", try: create(own)},
		{name: "count a repeat of its own Event", try: patch(own, ownPatched)},
		{name: "create an Event about another agent's Pod", try: create(others), refuse: []string{ruleOwnEvent, ruleEventSigned}},
		{name: "create an Event about another agent's Pod, from its node", refuse: []string{ruleOwnEvent},
			try: create(changed(own, func(e *corev1.Event) { e.InvolvedObject = *others.InvolvedObject.DeepCopy() }))},
		{name: "create an Event about an earlier Pod of its name", refuse: []string{ruleOwnEvent},
			try: create(changed(own, func(e *corev1.Event) { e.InvolvedObject.UID = otherPodUID }))},
		{name: "create an Event about its own VM", refuse: []string{ruleOwnEvent},
			try: create(changed(own, func(e *corev1.Event) {
				e.InvolvedObject = corev1.ObjectReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: derive.Name(f.p.Prototype, f.pod.Name, f.pod.UID), Namespace: f.p.Namespace}
			}))},
		{name: "create an Event about its own Pod, signed by the kubelet", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Source.Component, e.ReportingController = "kubelet", "kubelet" }))},
		{name: "create an Event about its own Pod, from another node", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Source.Host, e.ReportingInstance = "node-2", "node-2" }))},
		{name: "create an Event about its own Pod, related to another", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Related = others.InvolvedObject.DeepCopy() }))},
		{name: "create an Event about its own Pod, with a finalizer", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Finalizers = []string{"example.com/never"} }))},
		{name: "patch the scheduler's Event", try: patch(scheduler, changed(scheduler, func(e *corev1.Event) { e.Count = 99 })),
			refuse: []string{ruleOwnEvent, ruleEventSigned, ruleEventAsMade}},
		{name: "patch the scheduler's Event into one of its own", try: patch(scheduler, changed(own, func(e *corev1.Event) { e.Name = scheduler.Name })),
			refuse: []string{ruleOwnEvent, ruleEventSigned, ruleEventAsMade}},
		// What the agent records, each bounded as the agent writes it.
		{name: "create an Event about its own Pod with a megabyte's message", refuse: []string{ruleEventAsMade},
			try: create(changed(own, func(e *corev1.Event) { e.Message = strings.Repeat("x", 1<<20) }))},
		{name: "create an Event about its own Pod with the longest message", try: create(changed(own, func(e *corev1.Event) {
			e.Message = strings.Repeat("x", contract.MaxEventMessage)
		}))},
		{name: "create an Event about its own Pod with a message a byte too long", refuse: []string{ruleEventAsMade},
			try: create(changed(own, func(e *corev1.Event) { e.Message = strings.Repeat("x", contract.MaxEventMessage+1) }))},
		{name: "create an Event about its own Pod with the kubelet's reason", refuse: []string{ruleEventAsMade},
			try: create(changed(own, func(e *corev1.Event) { e.Reason = "Killing" }))},
		{name: "create an Event about its own Pod with a stuck state's reason", try: create(changed(own, func(e *corev1.Event) { e.Reason = stuck.ReasonCrashLoop }))},
		{name: "create an Event about its own Pod of another type", refuse: []string{ruleEventAsMade},
			try: create(changed(own, func(e *corev1.Event) { e.Type = "Error" }))},
		{name: "create an Event about its own Pod, counted many times", refuse: []string{ruleEventAsMade},
			try: create(changed(own, func(e *corev1.Event) { e.Count = 1000000 }))},
		{name: "count a repeat of its own Event many times", refuse: []string{ruleEventAsMade},
			try: patch(own, changed(ownPatched, func(e *corev1.Event) { e.Count = 1000000 }))},
		{name: "count a repeat of its own Event back", refuse: []string{ruleEventAsMade},
			try: patch(ownPatched, changed(ownPatched, func(e *corev1.Event) { e.Count = 1 }))},
		{name: "patch its own Event's reason", refuse: []string{ruleEventAsMade},
			try: patch(own, changed(ownPatched, func(e *corev1.Event) { e.Reason = agent.ReasonCreated }))},
		{name: "create an Event about its own Pod, with a label", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Labels = map[string]string{"app": "payments"} }))},
		{name: "create an Event about its own Pod, with an action", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Action = "Deleted" }))},
		{name: "create an Event about its own Pod, named after another Pod", refuse: []string{ruleEventSigned},
			try: create(changed(own, func(e *corev1.Event) { e.Name = f.other.Name + ".1" }))},
		{name: "patch its own Event to be about another agent's Pod", refuse: []string{ruleOwnEvent},
			try: patch(own, changed(ownPatched, func(e *corev1.Event) { e.InvolvedObject = *others.InvolvedObject.DeepCopy() }))},
		{name: "create its Event with a token bound to no Pod", try: create(own).as(noPodToken), refuse: []string{ruleOwnEvent, ruleEventSigned}},
		{name: "a person creates an Event about an agent's Pod", try: create(scheduler).as(personToken)},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.refusals(t, c, tt.try)
			if diff := cmp.Diff(slices.Sorted(slices.Values(tt.refuse)), got); diff != "" {
				t.Errorf("refused by (-want +got):\n%s", diff)
			}
		})
		for _, r := range tt.refuse {
			seen[r] = true
		}
	}
	for _, r := range []string{ruleOwnEvent, ruleEventSigned, ruleEventAsMade} {
		if !seen[r] {
			t.Errorf("no case is refused by %q", r)
		}
	}
}
