package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Defaults of the agent's knobs.
const (
	// DefaultProbeAddress is where /healthz and /readyz are served.
	DefaultProbeAddress = ":8080"
	// DefaultDeleteTimeout is how long shutdown waits for the VM to be gone:
	// just under the 180s grace period `kubectl vmctl scaffold` gives the Pod.
	// It is the contract's, which status assumes of an agent Pod whose
	// arguments give none.
	DefaultDeleteTimeout = contract.DefaultDeleteTimeout
)

// DefaultBackoff paces retries of failed steps: 200ms doubling to a 30s cap,
// each wait stretched by up to half again at random, so a Deployment or a
// fleet that failed together (an API server restart) does not retry in
// lockstep.
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: 30 * time.Second}
}

// Config is what one agent needs to know.
type Config struct {
	// Prototype is the prototype VM's name, in PrototypeNamespace.
	Prototype          string
	PrototypeNamespace string
	// Namespace is where the derived VM is made.
	Namespace string
	// Pod is who the agent runs as.
	Pod Identity
	// AllowSharedVolumes lets the derived VMs share the prototype's writable
	// persistentVolumeClaim volumes.
	AllowSharedVolumes bool
	// ReplicaClaims, for a StatefulSet's agents, are the prototype's claims
	// that the StatefulSet makes per Pod (its volumeClaimTemplates): the VM
	// uses the Pod's own (see derive.Options).
	ReplicaClaims []string
	// Subdomain, for a StatefulSet's agents, is the headless Service that
	// selects the VMs: the VM gets the Pod's name as hostname and this
	// subdomain (see derive.Options).
	Subdomain string
	// StopOnEvacuation stops the VM when KubeVirt marks its VMI for
	// evacuation from this node (a drain tried to evict its launcher Pod):
	// for agents a drain does not evict, a DaemonSet's.
	StopOnEvacuation bool
	// EvictOnEvacuation evicts the agent's own Pod when KubeVirt marks its
	// VMI for evacuation from this node, so that the VM goes with its Pod
	// under the workload's PodDisruptionBudget, whoever asked: a drain,
	// which would evict the Pod as well, or KubeVirt's workload updater
	// after an upgrade, which evicts only launcher Pods. For Pods a
	// controller replaces: a Deployment's or a StatefulSet's.
	EvictOnEvacuation bool
	// ProbeAddress is the host:port of /healthz and /readyz.
	ProbeAddress string
	// DeleteTimeout bounds how long shutdown waits for the VM to be gone.
	DeleteTimeout time.Duration
	// OwnRequests and OwnLimits are the agent container's own requests and
	// limits (--own-requests, --own-limits): with a reservation it asks for
	// more, and resizes itself to these once its VM's launcher Pod waits
	// for the room (see handOver). Empty: it
	// holds no reservation and never resizes.
	OwnRequests, OwnLimits corev1.ResourceList
	// Requests are the container's requests now (contract.EnvRequestsCPU,
	// EnvRequestsMemory); nil when unknown.
	Requests corev1.ResourceList
	// LauncherPriorityClass, for an agent that holds its VM's room, is the
	// priority class its VM's launcher Pod gets (derive.Options): of the
	// prototype's priority, never preempting, so that the launcher Pod's
	// nomination lasts through its failed attempts
	// (contract.EnvLauncherPriorityClass). Empty: the prototype's.
	LauncherPriorityClass string
	// Reservation is the room the Pod's template holds for the VM, as its
	// vmctl.kubevirt.io/reservation annotation says (contract.EnvReservation):
	// the agent compares it with what the VM's launcher Pod asks for.
	// Empty when the template holds none or does not pass it on; then,
	// while the Pod still holds the room, Requests less OwnRequests
	// tell it (see heldReservation).
	Reservation string
	// MoveAfter is how long the VM may stay unschedulable on the Pod's node
	// before the agent evicts its own Pod (see mover); 0 never. Only for
	// Pods a controller replaces elsewhere: a Deployment's or a
	// StatefulSet's, whose template reserves the VM's size.
	MoveAfter time.Duration
	// VMRevisionHash is the VM revision the Pod's template pins
	// (contract.EnvVMRevision): the hash under which the workload's
	// revision store, StoreName, holds the snapshot of the prototype the
	// agent derives its VM from. Empty: the Pod's template pins none (written
	// or edited by hand), and the agent makes no VM (stuck.ReasonNotPinned).
	VMRevisionHash string
	// StoreName is the name of the workload's revision store, a
	// VMRevisionStore in the Pod's namespace (--vm-revisions). Required
	// when VMRevisionHash is set.
	StoreName string
	// StateDir is where the agent records the VM it makes (see record.go):
	// the Pod's emptyDir volume. Empty: it keeps no record, and looks for
	// a VM an earlier container made by label.
	StateDir string
	// Backoff paces retries; the zero value means DefaultBackoff.
	Backoff wait.Backoff
}

// Validate checks names and durations; it does no I/O.
func (c Config) Validate() error {
	var errs []error
	check := func(what, value string, msgs []string) {
		if value == "" {
			errs = append(errs, fmt.Errorf("%s is empty", what))
			return
		}
		if len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q is not a valid name: %s", what, value, strings.Join(msgs, "; ")))
		}
	}
	check("prototype", c.Prototype, validation.IsDNS1123Subdomain(c.Prototype))
	check("prototype namespace", c.PrototypeNamespace, validation.IsDNS1123Label(c.PrototypeNamespace))
	check("namespace", c.Namespace, validation.IsDNS1123Label(c.Namespace))
	check("pod name", c.Pod.PodName, validation.IsDNS1123Subdomain(c.Pod.PodName))
	check("pod namespace", c.Pod.PodNamespace, validation.IsDNS1123Label(c.Pod.PodNamespace))
	if c.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(c.Subdomain); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("subdomain %q is not a valid Service name: %s", c.Subdomain, strings.Join(msgs, "; ")))
		} else if msgs := validation.IsDNS1123Label(c.Pod.PodName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("pod name %q cannot be the VM's hostname with --subdomain: %s; --subdomain is for StatefulSet Pods", c.Pod.PodName, strings.Join(msgs, "; ")))
		}
	}
	for _, claim := range c.ReplicaClaims {
		if msgs := validation.IsDNS1123Subdomain(derive.ReplicaClaimName(claim, c.Pod.PodName)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s: claim %q of Pod %q would be named %q, not a valid PersistentVolumeClaim name: %s",
				contract.FlagReplicaClaims, claim, c.Pod.PodName, derive.ReplicaClaimName(claim, c.Pod.PodName), strings.Join(msgs, "; ")))
		}
	}
	if c.StoreName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.StoreName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q is not a valid VMRevisionStore name: %s", contract.FlagVMRevisions, c.StoreName, strings.Join(msgs, "; ")))
		}
	} else if c.pinned() {
		errs = append(errs, fmt.Errorf("the Pod's template pins VM revision %q (%s) but the agent's arguments name no revision store: "+
			"add --%s=<workload>-vm-revisions, or scaffold the workload again", c.VMRevisionHash, contract.EnvVMRevision, contract.FlagVMRevisions))
	}
	if c.DeleteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("delete timeout must be positive, not %v", c.DeleteTimeout))
	}
	if len(c.OwnLimits) > 0 && len(c.OwnRequests) == 0 {
		errs = append(errs, errors.New("own limits without own requests: pass --own-requests too"))
	}
	if c.StopOnEvacuation && c.EvictOnEvacuation {
		errs = append(errs, fmt.Errorf("--%s and --%s exclude each other: a DaemonSet's agent stops its VM, any other evicts its Pod",
			contract.FlagStopOnEvacuation, contract.FlagEvictOnEvacuation))
	}
	if c.MoveAfter < 0 {
		errs = append(errs, fmt.Errorf("move-after must be 0 (never) or positive, not %v", c.MoveAfter))
	}
	if c.ProbeAddress == "" {
		errs = append(errs, errors.New("probe address is empty; use host:port such as :8080"))
	}
	return errors.Join(errs...)
}

// pinned reports whether the Pod's template pins a VM revision.
func (c Config) pinned() bool { return c.VMRevisionHash != "" }

func (c Config) backoff() wait.Backoff {
	if c.Backoff.Duration == 0 {
		return DefaultBackoff()
	}
	return c.Backoff
}
