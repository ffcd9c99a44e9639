package agent

import (
	"context"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Reasons of the Events the agent records on its Pod.
const (
	ReasonCreated          = "Created"
	ReasonAdopted          = "Adopted"
	ReasonReplaced         = "Replaced"
	ReasonSharedVolumes    = "SharedVolumes"
	ReasonInvalidPrototype = "InvalidPrototype"
	ReasonVMConflict       = "VMConflict"
	ReasonCreateFailed     = "CreateFailed"
	ReasonVMDeleted        = "VMDeleted"
	ReasonDeleteFailed     = "DeleteFailed"
	ReasonWatchDenied      = "WatchDenied"
	ReasonEvacuated        = "Evacuated"
	// ReasonEvacuating: KubeVirt asked to evacuate the VM, and the agent
	// evicts its own Pod so that the VM goes with it (EvictOnEvacuation).
	ReasonEvacuating = "EvacuatingVM"
	// ReasonEvacuationBlocked: that eviction was refused, most often by a
	// PodDisruptionBudget; the agent asks again later, and stays Ready.
	ReasonEvacuationBlocked = "EvacuationBlocked"
	ReasonPodUnknown        = "PodUnknown"
	// ReasonRevisionUnavailable: the workload's revision store cannot be
	// read (refused, or the API server fails). A store that lacks the
	// revision the Pod pins is stuck.ReasonRevisionMissing.
	ReasonRevisionUnavailable = "RevisionUnavailable"
)

// EventComponent is the source.component of the agent's Events.
const EventComponent = contract.EventComponent

// problem is why the agent is not ready. Its message goes to /readyz, the
// log and a Warning Event.
type problem struct {
	reason string
	msg    string
	err    error
}

func (p *problem) Error() string { return p.msg }
func (p *problem) Unwrap() error { return p.err }

// reporter tells the world what the agent does: /readyz, the log, and Events
// on the Pod. A problem that persists across retries becomes one Event, not
// one per retry, so a waiting Pod costs the API server nothing.
type reporter struct {
	status   *readiness
	metrics  *metrics
	recorder record.EventRecorder // nil until the Pod is known
	pod      *corev1.ObjectReference

	mu   sync.Mutex // the VM's and the VMI's watches both report
	last string
}

// startEvents begins recording Events on pod; they stop when ctx ends.
func (r *reporter) startEvents(ctx context.Context, events typedcorev1.EventsGetter, pod Identity) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(countingEvents{&typedcorev1.EventSinkImpl{Interface: events.Events("")}, r.metrics})
	r.recorder = b.NewRecorder(scheme.Scheme, EventSource(pod))
	r.pod = EventSubject(pod)
}

// EventSource is who the agent of pod says records its Events: the agent,
// on pod's node. The event policy scaffold writes admits no other.
func EventSource(pod Identity) corev1.EventSource {
	return corev1.EventSource{Component: EventComponent, Host: pod.Node}
}

// EventSubject is what every Event of the agent of pod is about: pod
// itself, by name and UID. The event policy scaffold writes admits no
// other.
func EventSubject(pod Identity) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: "v1",
		Kind:       "Pod",
		Name:       pod.PodName,
		Namespace:  pod.PodNamespace,
		UID:        pod.PodUID,
	}
}

// fail marks the agent unready for p, logs it, and records it once. /readyz
// names only p's reason: the message may quote the API server, and the probe
// port answers anyone who can reach the Pod.
func (r *reporter) fail(ctx context.Context, p *problem) {
	r.status.set(false, p.reason)
	klog.FromContext(ctx).Info("Not ready", "reason", p.reason, "message", p.msg)
	r.event(corev1.EventTypeWarning, p.reason, p.msg)
}

// warn logs and records, once, a problem that leaves the agent ready: its
// VM still serves.
func (r *reporter) warn(ctx context.Context, reason, msg string) {
	klog.FromContext(ctx).Info(msg, "reason", reason)
	r.event(corev1.EventTypeWarning, reason, msg)
}

// done logs a step that worked and records it once.
func (r *reporter) done(ctx context.Context, reason, msg string) {
	klog.FromContext(ctx).Info(msg, "reason", reason)
	r.event(corev1.EventTypeNormal, reason, msg)
}

func (r *reporter) event(typ, reason, msg string) {
	msg = eventMessage(msg)
	key := typ + "\x00" + reason + "\x00" + msg
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recorder == nil || key == r.last {
		return
	}
	r.last = key
	r.recorder.Event(r.pod, typ, reason, msg)
}

// eventMessage is msg cut, on a character's boundary, so that it fits the
// event policy's contract.MaxEventMessage bytes even once client-go's
// recorder prefixed it as it does when it combines similar Events. A
// message that long quotes the API server: its start says what failed.
func eventMessage(msg string) string {
	const cutMark = " ..."
	room := contract.MaxEventMessage - len(record.EventAggregatorByReasonMessageFunc(&corev1.Event{}))
	if len(msg) <= room {
		return msg
	}
	cut := room - len(cutMark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + cutMark
}
