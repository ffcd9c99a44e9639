// Package contract is what the agent, the manifests scaffold writes for it,
// and the commands that read agent Pods and derived VMs (gc, status,
// rollout, diff) must agree on: the agent's flags, environment and
// container, the labels and annotations of its Pod, the format in which
// those flags and annotations carry resources, the labels and annotations
// of the VM it derives, and the numbers of that VM's name rule.
// Each is defined here once; the admission policy's CEL is written from
// these constants too. It imports nothing of vmctl's, so every side can
// import it.
package contract
