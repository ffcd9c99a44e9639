package gc

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// StoreAction is what gc does to one revision store: delete it, or
// replace it (its data cannot change) by Replacement, without the
// revisions Pruned.
type StoreAction struct {
	Namespace, Name string
	// UID and ResourceVersion are the store's as gc read it: it is deleted
	// on condition that it is still that object, unchanged.
	UID             types.UID
	ResourceVersion string
	// Workload is the name of the workload the store is of.
	Workload string
	// Delete: the whole store goes, its workload is gone (WorkloadGone)
	// or no template names any of its revisions.
	Delete       bool
	WorkloadGone bool
	// Pruned are the hashes of the revisions that go, sorted.
	Pruned []string
	// Replacement, unless Delete, is the store without the pruned
	// revisions: its labels, annotations and owners, revision number one
	// more.
	Replacement *appsv1.ControllerRevision
}

// Why explains the action as gc prints it.
func (a StoreAction) Why() string {
	switch {
	case a.WorkloadGone:
		return "no Deployment, StatefulSet or DaemonSet " + a.Workload
	case a.Delete:
		return "no template names its VM revisions"
	}
	what := "VM revision"
	if len(a.Pruned) > 1 {
		what += "s"
	}
	return fmt.Sprintf("%s %s named by no template", what, strings.Join(a.Pruned, ", "))
}

// Unreadable is a revision store gc leaves alone: it cannot read its
// revisions, so cannot tell which are named.
type Unreadable struct {
	Namespace, Name string
	Err             error
}

// PlanStores returns what to do with each revision store among
// t.ControllerRevisions (contract.ComponentVMRevisions): the revisions
// that no template of t names (Retained) go; a store left with none, or
// whose workload (contract.LabelWorkload) is no Deployment, StatefulSet or
// DaemonSet of its namespace, is deleted, unless a template still names
// one of its revisions (a workload deleted with its Pods orphaned: those
// Pods keep what they pin). A store younger than minAge is left alone: it
// is replaced with each revision a rollout adds, before the rollout
// writes the template that names it. So is one being deleted. Actions are
// sorted by namespace and name.
func PlanStores(t Templates, now time.Time, minAge time.Duration) ([]StoreAction, []Unreadable) {
	retained := Retained(t)
	workloads := map[types.NamespacedName]bool{}
	for _, d := range t.Deployments {
		workloads[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}] = true
	}
	for _, s := range t.StatefulSets {
		workloads[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = true
	}
	for _, d := range t.DaemonSets {
		workloads[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}] = true
	}
	var actions []StoreAction
	var unreadable []Unreadable
	for i := range t.ControllerRevisions {
		cr := &t.ControllerRevisions[i]
		if !isStore(cr) || cr.DeletionTimestamp != nil || now.Sub(cr.CreationTimestamp.Time) < minAge {
			continue
		}
		store, err := revision.FromObject(cr)
		if err != nil {
			unreadable = append(unreadable, Unreadable{Namespace: cr.Namespace, Name: cr.Name, Err: err})
			continue
		}
		a := StoreAction{Namespace: cr.Namespace, Name: cr.Name, UID: cr.UID, ResourceVersion: cr.ResourceVersion, Workload: store.Workload}
		named := retained[types.NamespacedName{Namespace: cr.Namespace, Name: cr.Name}]
		a.WorkloadGone = !workloads[types.NamespacedName{Namespace: cr.Namespace, Name: store.Workload}] && len(named) == 0
		a.Pruned = slices.DeleteFunc(store.Hashes(), func(h string) bool { return named[h] })
		if !store.Retain(named) && !a.WorkloadGone {
			continue // every revision named
		}
		a.Delete = a.WorkloadGone || len(store.Revisions) == 0
		if !a.Delete {
			a.Replacement, err = replacement(cr, store)
			if err != nil {
				unreadable = append(unreadable, Unreadable{Namespace: cr.Namespace, Name: cr.Name, Err: err})
				continue
			}
		}
		actions = append(actions, a)
	}
	slices.SortFunc(actions, func(a, b StoreAction) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return actions, unreadable
}

// replacement is cr holding store, one revision number on: what gc
// creates in its place, with its labels, annotations and owners.
func replacement(cr *appsv1.ControllerRevision, store *revision.Store) (*appsv1.ControllerRevision, error) {
	store.Number = cr.Revision + 1
	obj, err := store.Object()
	if err != nil {
		return nil, err
	}
	obj.ObjectMeta = metav1.ObjectMeta{
		Name: cr.Name, Namespace: cr.Namespace,
		Labels: cr.Labels, Annotations: cr.Annotations, OwnerReferences: cr.OwnerReferences,
	}
	return obj, nil
}
