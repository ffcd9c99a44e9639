package status

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// problemAgentSaysFmt: a Pod without VM whose agent recorded why, in a
// Warning Event of one of its own reasons (contract.AgentEventReasons):
// the reason and the Event's message, which says what to do.
const problemAgentSaysFmt = ProblemVMMissing + ": %s: %s"

// agentEventSelector narrows a LIST of Events to the Warnings agents
// record on their Pods (their source.component is contract.EventComponent),
// the only Events status reads.
var agentEventSelector = fields.Set{
	"involvedObject.kind": "Pod",
	"type":                corev1.EventTypeWarning,
	"source":              contract.EventComponent,
}.AsSelector().String()

// lacksVM reports whether an agent Pod of q's namespace runs, is not on
// its way out, and no derived VM inv holds records it: its agent may have
// said why in an Event (agentSays), which status then reads. A VM in
// another namespace than q's that inv does not hold yet counts as lacking.
func lacksVM(q Query, inv *Inventory) bool {
	has := map[types.UID]bool{}
	for _, vm := range inv.VMs {
		if derive.IsAgentVM(vm) {
			has[derive.OriginOf(vm).PodUID] = true
		}
	}
	return slices.ContainsFunc(inv.Pods, func(p *corev1.Pod) bool {
		return q.InScope(p.Namespace) && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && !has[p.UID]
	})
}

// agentSays returns, by Pod UID, the problem the latest Warning Event of
// events that the Pod's agent recorded says: one of the agent's reasons,
// from the agent's component, about a Pod. A stuck state's message starts
// with its own words (stuck.State's Prefix), which are the problem as they
// are; another's is problemAgentSaysFmt. Events of other reasons, which
// anyone with leave to create Events could write, are left out.
func agentSays(events []*corev1.Event) map[types.UID]string {
	own := append(contract.AgentEventReasons(), stuck.Reasons()...)
	latest := map[types.UID]*corev1.Event{}
	for _, e := range events {
		o := e.InvolvedObject
		if e.Type != corev1.EventTypeWarning || o.Kind != "Pod" || o.UID == "" || e.Source.Component != contract.EventComponent ||
			!slices.Contains(own, e.Reason) || o.Namespace != e.Namespace {
			continue
		}
		if l := latest[o.UID]; l == nil || newer(e, l) {
			latest[o.UID] = e
		}
	}
	out := make(map[types.UID]string, len(latest))
	for uid, e := range latest {
		out[uid] = fmt.Sprintf(problemAgentSaysFmt, e.Reason, e.Message)
		if slices.Contains(stuck.Reasons(), e.Reason) {
			out[uid] = e.Message
		}
	}
	return out
}

// newer reports whether a was recorded after b: by when it was last seen,
// then by name, which client-go's recorder makes of the Pod's name and the
// time in nanoseconds, in hex, so that a later one sorts after.
func newer(a, b *corev1.Event) bool {
	return cmp.Or(eventTime(a).Compare(eventTime(b)), cmp.Compare(len(a.Name), len(b.Name)), cmp.Compare(a.Name, b.Name)) > 0
}

// eventTime is when e was last seen, to the second, as kubectl get events
// sorts them.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
