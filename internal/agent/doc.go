// Package agent runs inside each vmctl Pod: it derives a VirtualMachine from
// a prototype, creates it pinned to the Pod's node, reports the VM's
// status.ready on /readyz, and deletes the VM when the Pod is told to stop.
//
// The agent talks to the API server as little as it can: before steady state
// it GETs the prototype, opens one WATCH on its VM by name (a streaming
// list that stays open as the watch), CREATEs the VM unless that list
// holds one made for this Pod already, and POSTs one Event. The VM's name
// it follows is the one its Pod's record says an agent of the Pod made
// (record.go), whatever that name, or the derived one; without a record
// to trust, it first lists the VMs labelled for its Pod once (a streaming
// list, closed once in). It GETs its Pod too when the downward API did not
// provide NODE_NAME and POD_UID. At steady state the one watch is all
// there is (see followOwn for why by name). Its watches are client-go's
// Reflector (see followSet): after an API server restart or a 410 Gone
// they list again from a current resourceVersion, one or two requests,
// with jittered backoff.
//
// When the VM's name is taken, the agent adopts a VM made for its own Pod
// UID, replaces one vmctl made for an earlier Pod of the same name and
// prototype (DELETE with a UID precondition, wait until gone, CREATE), and
// refuses anything else: it never touches such a VM, stays unready, and
// retries with capped backoff. Transient errors are retried the same way and
// are never fatal. A prototype that cannot be derived (shared writable
// volumes, no template) is reported once and then watched, by name, until its
// generation changes, or for ten minutes, before the agent tries again.
//
// Every problem shows on /readyz, in the log and, once per distinct problem,
// as a Warning Event on the Pod.
package agent
