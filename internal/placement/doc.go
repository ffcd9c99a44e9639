// Package placement says where a VM may run, in the terms of a Pod spec:
// the nodeSelector, affinity, tolerations, topology spread constraints,
// priority class and scheduler that KubeVirt's virt-controller gives the
// VM's launcher Pod (Of), so that scaffold can give the agent Pods the same
// and the scheduler places each agent where its VM may go.
//
// A derived VM is pinned to its agent's node, so the agent's placement is
// the VM's: an agent placed by other rules than its VM's holds a node its
// VM may never use. Scaffold stamps the workload's Pod template with Key,
// a hash of the prototype's own placement; each agent reads it through the
// downward API and compares it with its prototype's Key when it makes its
// VM, needing no read of its Pod or its Node. Equal keys mean the scheduler
// placed the agent by its VM's rules; different keys mean the prototype's
// placement changed since the template was written.
//
// Of, Key and Apply are pure; Resolve reads the prototype's
// instancetype and preference.
package placement
