// Package rollout rolls a prototype's change through the workloads whose
// agents derive VMs from it, the way `kubectl rollout restart` and `kubectl
// rollout status` do for Pods: it finds the Deployments, StatefulSets and
// DaemonSets of a prototype, decides which need a restart (their template
// pins another VM revision than the prototype's now, see package
// revision), pins them to it (the revision store first, then the
// template), and says how far a rollout has come: the workload's own
// progress, as kubectl reports it, and then whether every Pod's VM is ready
// and of the revision the Pod pins.
//
// A Pod is Ready only while its VM is, so each workload's own strategy
// (maxUnavailable, maxSurge, partition) paces how many VMs are replaced at
// once. What differs by workload kind is in one table, kinds.go; an object
// of another kind is refused with an error. The decisions and reports are
// pure functions; find.go and watch.go read the cluster, patch.go and
// store.go write it.
package rollout
