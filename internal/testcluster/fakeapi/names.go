// Package fakeapi makes client-go's fake clientsets answer as the API server
// does where the unit tests rely on it, and hands them to the commands. It
// stands in for kube-apiserver's field selection, which the fakes' object
// tracker lacks (the e2e tests run the real one), and for the client
// factory, with Factory.
package fakeapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// SelectNames makes a fake clientset honour a metadata.name field selector
// in LISTs and WATCHes, as the API server does: the object tracker ignores
// field selectors. Call it with the clientset's Fake and Tracker().
func SelectNames(f *k8stesting.Fake, tracker k8stesting.ObjectTracker) {
	f.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n, ok := selectedName(a)
		if !ok {
			return false, nil, nil
		}
		_, list, err := k8stesting.ObjectReaction(tracker)(a)
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return true, nil, err
		}
		items = slices.DeleteFunc(items, func(o runtime.Object) bool {
			m, _ := meta.Accessor(o)
			return m.GetName() != n
		})
		return true, list, meta.SetList(list, items)
	})
	f.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		n, ok := selectedName(a)
		if !ok {
			return false, nil, nil
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			return e, err == nil && m.GetName() == n
		}), nil
	})
}

// selectedName is the name a LIST's or WATCH's field selector asks for.
func selectedName(a k8stesting.Action) (string, bool) {
	if w, ok := a.(k8stesting.WatchAction); ok {
		return w.GetWatchRestrictions().Fields.RequiresExactMatch("metadata.name")
	}
	l, ok := a.(k8stesting.ListAction)
	if !ok || l.GetListRestrictions().Fields == nil {
		return "", false
	}
	return l.GetListRestrictions().Fields.RequiresExactMatch("metadata.name")
}
