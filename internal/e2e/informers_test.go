//go:build e2e

package e2e

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// vmInformer is an informer over the VirtualMachines of ns that match
// selector ("" for all): the typed KubeVirt clientset has no informers.
func vmInformer(ns, selector string) cache.SharedIndexInformer {
	lw := cache.NewFilteredListWatchFromClient(e.virt.KubevirtV1().RESTClient(), "virtualmachines", ns,
		func(opts *metav1.ListOptions) { opts.LabelSelector = selector })
	return cache.NewSharedIndexInformer(lw, &kubevirtv1.VirtualMachine{}, 0, cache.Indexers{})
}

// vmiInformer is an informer over the VirtualMachineInstances of ns.
func vmiInformer(ns string) cache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(e.virt.KubevirtV1().RESTClient(), "virtualmachineinstances", ns, fields.Everything())
	return cache.NewSharedIndexInformer(lw, &kubevirtv1.VirtualMachineInstance{}, 0, cache.Indexers{})
}

// onEach is an event handler that calls on with every object of type T
// added, updated (its new state) or deleted, the last state of a deletion
// the informer only learnt of by listing again (a tombstone) included.
//
// An object deleted and made again under the same name while the
// informer's watch was down (after an API server restart, say) comes as
// one update when it lists again, the key being the same: onEach reports
// it as the old object's deletion, then the new one, so that a VM replaced
// is not taken for two alive at once.
func onEach[T runtime.Object](on func(obj T, deleted bool)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { on(obj.(T), false) },
		UpdateFunc: func(old, obj any) {
			if uidOf(old) != uidOf(obj) {
				on(old.(T), true)
			}
			on(obj.(T), false)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(T); ok {
				on(o, true)
			}
		},
	}
}

func uidOf(obj any) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}

// TestOnEachTellsAReplacedObjectFromAnUpdate: found by the chaos soak, whose
// observer took a derived VM deleted by hand and made again by its agent,
// while the soak's VM watch was down after an API server restart, for two
// VMs alive at once for one Pod.
func TestOnEachTellsAReplacedObjectFromAnUpdate(t *testing.T) {
	vm := func(uid, rv string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: types.UID(uid), ResourceVersion: rv}}
	}
	var got []string
	h := onEach(func(vm *kubevirtv1.VirtualMachine, deleted bool) {
		got = append(got, fmt.Sprintf("%s deleted=%v", vm.UID, deleted))
	})
	h.OnAdd(vm("a", "1"), false)
	h.OnUpdate(vm("a", "1"), vm("a", "2"))
	h.OnUpdate(vm("a", "2"), vm("b", "5")) // a relist after a and b's lives
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/vm", Obj: vm("b", "5")})
	want := []string{"a deleted=false", "a deleted=false", "a deleted=true", "b deleted=false", "b deleted=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
