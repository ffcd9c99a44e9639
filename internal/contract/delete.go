package contract

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The options of the agent's deletes and its eviction, and no others: the
// guard and pod policies admit exactly these from an agent's token, so a
// stolen one cannot orphan a VM's instance (propagationPolicy Orphan) or
// kill its own Pod without its grace period, which its agent needs to
// delete the VM.

// VMDeleteOptions delete the agent's VM of uid, in the background: the
// VM's finalizer keeps it until virt-controller stopped its instance, and
// the garbage collector deletes the rest without a request a dependent.
func VMDeleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(uid)},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}
}

// VMIDeleteOptions delete the agent's VM's instance of uid, to stop the VM
// for a drain.
func VMIDeleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(uid)}}
}

// EvictionDeleteOptions evict the agent's own Pod of uid, and no later Pod
// of its name.
func EvictionDeleteOptions(uid types.UID) *metav1.DeleteOptions {
	return &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(uid))}
}
