package gc

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// StoreAction is what gc does to one revision store: delete it, or
// update it to Replacement, without the revisions Pruned.
type StoreAction struct {
	Namespace, Name string
	// UID and ResourceVersion are the store's as gc read it: it is deleted
	// or updated on condition that it is still that object, unchanged.
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
	// Replacement, unless Delete, is the store as gc read it (its UID and
	// resourceVersion too) without the pruned revisions.
	Replacement *unstructured.Unstructured
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

// PlanStores returns what to do with each revision store among t.Stores
// (contract.ComponentVMRevisions): the revisions that no template of t
// names (Retained) go, but for one stored less than minAge ago (its
// metadata.creationTimestamp, which rollout restart sets when it adds
// it): a rollout adds its revision before it writes the template that
// names it; a store left with none, or
// whose workload (contract.LabelWorkload) is no Deployment, StatefulSet or
// DaemonSet of its namespace, is deleted, unless a template still names
// one of its revisions (a workload deleted with its Pods orphaned: those
// Pods keep what they pin). A store younger than minAge is left alone, as
// scaffold's output writes it before the template that names its
// revision. So is one being deleted. Actions are
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
	for i := range t.Stores {
		u := &t.Stores[i]
		if !isStore(u) || u.GetDeletionTimestamp() != nil || now.Sub(u.GetCreationTimestamp().Time) < minAge {
			continue
		}
		store, err := revision.FromObject(u)
		if err != nil {
			unreadable = append(unreadable, Unreadable{Namespace: u.GetNamespace(), Name: u.GetName(), Err: err})
			continue
		}
		a := StoreAction{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(), Workload: store.Workload}
		named := maps.Clone(retained[types.NamespacedName{Namespace: a.Namespace, Name: a.Name}])
		if named == nil {
			named = map[string]bool{}
		}
		a.WorkloadGone = !workloads[types.NamespacedName{Namespace: a.Namespace, Name: store.Workload}] && len(named) == 0
		for h, r := range store.Revisions {
			if now.Sub(r.CreationTimestamp.Time) < minAge {
				named[h] = true // just added: its template may be on its way
			}
		}
		a.Pruned = slices.DeleteFunc(store.Hashes(), func(h string) bool { return named[h] })
		if !store.Retain(named) && !a.WorkloadGone {
			continue // every revision named
		}
		a.Delete = a.WorkloadGone || len(store.Revisions) == 0
		if !a.Delete {
			a.Replacement, err = replacement(u, store)
			if err != nil {
				unreadable = append(unreadable, Unreadable{Namespace: a.Namespace, Name: a.Name, Err: err})
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

// replacement is u holding store: what gc updates u to, with its
// metadata, resourceVersion included.
func replacement(u *unstructured.Unstructured, store *revision.Store) (*unstructured.Unstructured, error) {
	obj, err := store.Object()
	if err != nil {
		return nil, err
	}
	r := u.DeepCopy()
	r.Object["spec"] = obj.Object["spec"]
	return r, nil
}
