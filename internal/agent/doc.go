// Package agent runs inside each vmctl Pod: it derives a VirtualMachine from
// a prototype, creates it pinned to the Pod's node, reports the VM's
// status.ready on /readyz, and deletes the VM when the Pod is told to stop.
//
// The agent talks to the API server as little as it can: before steady state
// it GETs the prototype, CREATEs the VM, opens one WATCH on that VM by name,
// and POSTs one Event (plus one Pod GET when the downward API did not provide
// NODE_NAME and POD_UID). At steady state the one watch is all there is.
package agent
