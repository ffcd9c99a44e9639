// Package revision pins what a workload's agents derive their VMs from, the
// way a Pod template pins its containers. A VM revision is a snapshot of the
// prototype VirtualMachine: its spec, with its instancetype and preference
// expanded by KubeVirt as it stores them for the prototype, and the labels
// and annotations derive copies. A hash of its content names it. The
// workload's Pod template carries that name (contract.AnnotationVMRevision),
// so the workload's own rollout, history and undo govern which revision its
// VMs run; the workload's revision store, one VMRevisionStore (a custom
// resource of vmctl's own, StoreCRD) beside it, holds every revision its
// retained templates name, and is the admission policy's parameter.
//
// Everything here is pure: reading the prototype and writing the store is
// the callers'.
package revision
