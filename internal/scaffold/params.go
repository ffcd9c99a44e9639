// Package scaffold builds the Kubernetes objects that run vmctl agents: a
// ServiceAccount with least-privilege RBAC, the workload (Deployment, DaemonSet
// or StatefulSet) and optional Service, PodDisruptionBudget and
// ValidatingAdmissionPolicy. It is pure: no clients, no clock.
package scaffold

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/version"
)

// Kind is the workload controller that runs the agent Pods.
type Kind string

// The workload kinds scaffold can build.
const (
	KindDeployment  Kind = "Deployment"
	KindDaemonSet   Kind = "DaemonSet"
	KindStatefulSet Kind = "StatefulSet"
)

// ImageRepository is where release images of kubectl-vmctl are published.
const ImageRepository = "ghcr.io/kubectl-vmctl/kubectl-vmctl"

// Defaults of Params, which match the agent's own defaults.
const (
	DefaultReplicas           int32 = 1
	DefaultGracePeriodSeconds int64 = 180
	// DefaultMoveAfter is how long a Deployment's or StatefulSet's VM may
	// stay unschedulable on its agent's node before the agent gives the
	// node up (see Moves): KubeVirt's own VirtualMachinePool autohealing
	// waits as long.
	DefaultMoveAfter = 5 * time.Minute
	// MinGracePeriodSeconds leaves the agent a --delete-timeout of at least
	// 5s once the 10s margin is taken off.
	MinGracePeriodSeconds int64 = 15
	// ProbePort is where the agent serves /healthz and /readyz.
	ProbePort int32 = 8080
)

// deleteMarginSeconds is contract.DeleteMargin in seconds: the agent's
// default --delete-timeout=170s is the default grace period minus this
// margin.
const deleteMarginSeconds = int64(contract.DeleteMargin / time.Second)

// ValidKinds lists the kinds as the command line spells them, for help and errors.
const ValidKinds = "deployment (deploy), daemonset (ds), statefulset (sts)"

// ParseKind turns "deployment", "deploy", "ds", "StatefulSet", ... into a
// Kind, accepting what kubectl accepts for these resources.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "deployment", "deployments", "deploy":
		return KindDeployment, nil
	case "daemonset", "daemonsets", "ds":
		return KindDaemonSet, nil
	case "statefulset", "statefulsets", "sts":
		return KindStatefulSet, nil
	}
	return "", fmt.Errorf("unknown workload kind %q: use one of %s", s, ValidKinds)
}

// ServicePort is the port of the Service in front of the derived VMs.
type ServicePort struct {
	Port int32
	// TargetPort is the port on the VMs; zero means Port.
	TargetPort intstr.IntOrString
}

// Params say what to scaffold. NewParams fills in the defaults; Build checks
// them.
type Params struct {
	Kind Kind
	// Prototype is the name of the prototype VirtualMachine.
	Prototype string
	// Name names the workload, ServiceAccount, RBAC objects and Services.
	Name string
	// Namespace holds the workload, and the agents derive their VMs here.
	Namespace string
	// ProtoNamespace holds the prototype; empty means Namespace.
	ProtoNamespace string
	// Image is the agent's container image.
	Image string
	// Version is the kubectl-vmctl version, set as app.kubernetes.io/version.
	Version string
	// Replicas of a Deployment or StatefulSet; ignored for a DaemonSet.
	Replicas int32
	// GracePeriodSeconds is the Pods' terminationGracePeriodSeconds; the
	// agent's --delete-timeout is derived from it.
	GracePeriodSeconds int64
	// Service, when set, adds a Service named "<Name>-vms" in front of the VMs.
	Service *ServicePort
	// PDBMinAvailable, when set, adds a PodDisruptionBudget for the agent Pods.
	PDBMinAvailable *intstr.IntOrString
	// AdmissionPolicy adds a ValidatingAdmissionPolicy and its binding that
	// confine the ServiceAccount to the VMs its own Pods derive.
	AdmissionPolicy bool
	// AllowSharedVolumes passes --allow-shared-volumes to the agent.
	AllowSharedVolumes bool
	// ReplicaClaims, for a StatefulSet, are the prototype's claims it makes
	// per replica (see ReplicaClaim); ClaimsWhenDeleted and
	// ClaimsWhenScaled its claims' retention policy, empty meaning Retain.
	ReplicaClaims     []ReplicaClaim
	ClaimsWhenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType
	ClaimsWhenScaled  appsv1.PersistentVolumeClaimRetentionPolicyType
	// PodMonitor adds a Prometheus Operator PodMonitor for the agents'
	// /metrics.
	PodMonitor bool
	// Autoscale, when set, adds an HPA that scales the workload on its
	// guests' CPU (Min, Max and VMCPUPercent; Build fills in the rest), and
	// leaves the workload's replicas to it.
	Autoscale *Autoscale
	// MoveAfter is the agents' --move-after where they move (Moves); 0
	// never.
	MoveAfter time.Duration
	// Placement, when set, is where the prototype's VMs may run
	// (placement.Of): the agent Pods get it, so the scheduler puts each
	// agent where its VM may go, and the template is annotated with
	// PlacementKey, which `rollout restart` compares with the prototype's
	// then. Nil: the Pods go anywhere.
	Placement *placement.Placement
	// PlacementKey is placement.Key of the prototype; set with Placement.
	PlacementKey string
	// Reservation is the CPU and memory the scheduler counts for a VM's
	// virt-launcher Pod (reserve.Launcher): the agent container asks for
	// it on top of its own, and hands it to its VM's launcher Pod (see
	// podtemplate.AgentResources). Empty: the agent asks for its own only.
	Reservation corev1.ResourceList
	// Snapshot is the VM revision the template pins (see package
	// revision), named by RevisionHash: the workload's revision store
	// holds it, and the agents derive their VMs from it, never from the
	// live prototype. Placement and Reservation are the revision's.
	// Build refuses Params without one: agents make no VM without it.
	Snapshot     *kubevirtv1.VirtualMachine
	RevisionHash string
	// StoredRevisions are the revisions the workload's revision store
	// holds already, by hash, as the API server returned them: the
	// output's store keeps them, so that applying it again drops none that
	// Pods still pin and changes none (a retained revision never changes),
	// also the one it pins, where the store holds it.
	StoredRevisions map[string]any
	// LauncherPriority, with a Reservation, is the priority the scheduler
	// gives the prototype's VMs' Pods (its priority class's value, or the
	// cluster's default): the workload's launcher priority class has it,
	// and never preempts (see LauncherPriorityClass). Nil: the VMs keep
	// the prototype's class.
	LauncherPriority *int32
}

// NewParams returns Params with every default set: name "vmctl-<prototype>",
// this build's version and image, one replica, a 180s grace period and the
// admission policy.
func NewParams(kind Kind, prototype, namespace string) Params {
	v := version.Get().Version
	return Params{
		Kind:               kind,
		Prototype:          prototype,
		Name:               DefaultName(prototype),
		Namespace:          namespace,
		Image:              DefaultImage(v),
		Version:            v,
		Replicas:           DefaultReplicas,
		GracePeriodSeconds: DefaultGracePeriodSeconds,
		MoveAfter:          DefaultMoveAfter,
		AdmissionPolicy:    true,
	}
}

// DefaultName is the name scaffold gives the objects for a prototype.
func DefaultName(prototype string) string { return "vmctl-" + prototype }

// DefaultImage is the release image of a kubectl-vmctl version.
func DefaultImage(version string) string { return ImageRepository + ":" + imageTag(version) }

// imageTag makes a Go module version, which may carry "+incompatible" or
// "+dirty", into an image tag.
func imageTag(version string) string { return sanitize(version, 128) }

// sanitize replaces runes outside [A-Za-z0-9_.-] with '_', cuts s to maxLen
// bytes and trims it to start and end alphanumeric, as label values and image
// tags need.
func sanitize(s string, maxLen int) string {
	b := []byte(s)
	for i, c := range b {
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			b[i] = '_'
		}
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	// Every byte is ASCII now, so each rune is one byte.
	return strings.TrimFunc(string(b), func(r rune) bool { return !isAlnum(byte(r)) })
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// protoNamespace is where the prototype lives.
func (p Params) protoNamespace() string {
	if p.ProtoNamespace == "" {
		return p.Namespace
	}
	return p.ProtoNamespace
}

// crossNamespace reports whether the prototype lives outside Namespace.
func (p Params) crossNamespace() bool { return p.protoNamespace() != p.Namespace }

// subdomain is the headless Service that gives a StatefulSet's VMs their
// DNS names, and "" for other kinds: their Pods' names are not stable.
func (p Params) subdomain() string {
	if p.Kind == KindStatefulSet {
		return p.Name
	}
	return ""
}

// PrototypeNamespace is the prototype's namespace: ProtoNamespace, else
// Namespace.
func (p Params) PrototypeNamespace() string { return p.protoNamespace() }

// DeriveOptions are the options p's agents derive their VMs with.
func (p Params) DeriveOptions() derive.Options {
	return derive.Options{Namespace: p.Namespace, AllowSharedVolumes: p.AllowSharedVolumes, Subdomain: p.subdomain(), ReplicaClaims: p.replicaClaimNames()}
}
