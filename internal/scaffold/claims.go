package scaffold

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// ReplicaClaim is one of the prototype's claims that a StatefulSet makes
// per replica, as a volumeClaimTemplate of the claim's name: each Pod's
// VM uses the Pod's own, <claim>-<pod> (derive.ReplicaClaimName), which
// the StatefulSet keeps across the Pod's replacements, rescheduling and
// scale-in as its retention policy says.
type ReplicaClaim struct {
	// Name is the claim the prototype's persistentVolumeClaim volume names.
	Name string
	// Size is the claim's requested storage.
	Size resource.Quantity
	// StorageClass is the claim's class; nil means the cluster's default.
	StorageClass *string
	// AccessMode is how the node mounts the volume: the agent Pod and the
	// VM's launcher Pod, on one node, both use it.
	AccessMode corev1.PersistentVolumeAccessMode
	// VolumeMode is Filesystem (KubeVirt keeps disk.img on it) or Block.
	VolumeMode corev1.PersistentVolumeMode
}

// ClaimsSyntax is how ParseReplicaClaim reads a claim, for help and errors.
const ClaimsSyntax = "CLAIM=SIZE[,class=CLASS][,access=ReadWriteOnce|ReadWriteMany][,mode=Filesystem|Block]"

// ParseReplicaClaim reads "data=20Gi,class=local,access=ReadWriteOnce,mode=Block"
// (ClaimsSyntax): the access mode defaults to ReadWriteOnce, the volume
// mode to Filesystem, the class to the cluster's default.
func ParseReplicaClaim(s string) (ReplicaClaim, error) {
	parts := strings.Split(s, ",")
	name, size, ok := strings.Cut(parts[0], "=")
	if !ok || name == "" || size == "" {
		return ReplicaClaim{}, fmt.Errorf("%q names no claim and size: use %s, such as data=20Gi", s, ClaimsSyntax)
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return ReplicaClaim{}, fmt.Errorf("claim %s: size %q: %w; give a quantity such as 20Gi", name, size, err)
	}
	c := ReplicaClaim{Name: name, Size: q, AccessMode: corev1.ReadWriteOnce, VolumeMode: corev1.PersistentVolumeFilesystem}
	for _, opt := range parts[1:] {
		key, value, _ := strings.Cut(opt, "=")
		switch key {
		case "class":
			c.StorageClass = ptr.To(value)
		case "access":
			c.AccessMode = corev1.PersistentVolumeAccessMode(value)
		case "mode":
			c.VolumeMode = corev1.PersistentVolumeMode(value)
		default:
			return ReplicaClaim{}, fmt.Errorf("claim %s: unknown option %q: use %s", name, opt, ClaimsSyntax)
		}
	}
	return c, nil
}

// ParseRetention reads a retention policy field's value as kubectl spells
// it: Retain or Delete.
func ParseRetention(s string) (appsv1.PersistentVolumeClaimRetentionPolicyType, error) {
	for _, t := range []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType} {
		if strings.EqualFold(s, string(t)) {
			return t, nil
		}
	}
	return "", fmt.Errorf("%q is no retention policy: use Retain or Delete", s)
}

// replicaClaimNames are the names of p's ReplicaClaims, in order.
func (p Params) replicaClaimNames() []string {
	names := make([]string, len(p.ReplicaClaims))
	for i, c := range p.ReplicaClaims {
		names[i] = c.Name
	}
	return names
}

// validateClaims says what is wrong with p's ReplicaClaims: for another
// kind than a StatefulSet, each claim on its own, and, where the revision
// is known, a claim the prototype's volumes do not name.
func (p Params) validateClaims() []error {
	if len(p.ReplicaClaims) == 0 {
		return nil
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Kind != KindStatefulSet {
		add("--replica-claim needs a StatefulSet: a %s's Pods have neither stable names nor claims of their own, so no replica could find its disk again; "+
			"scaffold statefulset instead, or give the prototype a dataVolumeTemplate (a disk per VM, deleted with it)", p.Kind)
	}
	seen := map[string]bool{}
	for _, c := range p.ReplicaClaims {
		if seen[c.Name] {
			add("claim %s is given twice: give each claim once", c.Name)
		}
		seen[c.Name] = true
		// The longest Pod name a StatefulSet of p's Name makes within
		// five digits of ordinals.
		longest := derive.ReplicaClaimName(c.Name, p.Name+"-99999")
		if msgs := validation.IsDNS1123Subdomain(longest); len(msgs) > 0 {
			add("claim %s: its replicas' claims, such as %s, are no valid PersistentVolumeClaim names: %s", c.Name, longest, strings.Join(msgs, "; "))
		}
		if c.Size.Sign() <= 0 {
			add("claim %s: size %s: give a positive size such as 20Gi", c.Name, c.Size.String())
		}
		switch c.AccessMode {
		case corev1.ReadWriteOnce, corev1.ReadWriteMany:
		case corev1.ReadWriteOncePod:
			add("claim %s: access ReadWriteOncePod lets one Pod only use the volume, but the agent's Pod holds the claim "+
				"and the VM's launcher Pod mounts it, so the launcher Pod would never be scheduled: use ReadWriteOnce, which lets Pods of one node share it", c.Name)
		default:
			add("claim %s: access %q: use ReadWriteOnce or ReadWriteMany (a VM writes to its disk)", c.Name, c.AccessMode)
		}
		switch c.VolumeMode {
		case corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock:
		default:
			add("claim %s: mode %q: use Filesystem or Block", c.Name, c.VolumeMode)
		}
	}
	if p.Snapshot != nil {
		if err := derive.Refusal(p.Snapshot, p.Namespace, derive.Options{ReplicaClaims: p.replicaClaimNames(), AllowSharedVolumes: true}); err != nil {
			if rc, ok := errors.AsType[*derive.ReplicaClaimError](err); ok {
				errs = append(errs, rc)
			}
		}
	}
	return errs
}

// volumeClaimTemplates are the StatefulSet's templates of p's
// ReplicaClaims. The StatefulSet adds each to its Pods as a volume, which
// the agent container does not mount, so the kubelet mounts nothing: the
// scheduler binds the claim where the agent goes, and the VM's launcher
// Pod, pinned to that node, mounts it.
func (p Params) volumeClaimTemplates() []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, c := range p.ReplicaClaims {
		out = append(out, corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: p.selectorLabels()},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{c.AccessMode},
				StorageClassName: c.StorageClass,
				VolumeMode:       ptr.To(c.VolumeMode),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: c.Size}},
			},
		})
	}
	return out
}

// claimRetention is the StatefulSet's retention policy of its claims
// where it has any: Kubernetes' default, Retain both, unless p says.
func (p Params) claimRetention() *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	if len(p.ReplicaClaims) == 0 {
		return nil
	}
	r := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if p.ClaimsWhenDeleted != "" {
		r.WhenDeleted = p.ClaimsWhenDeleted
	}
	if p.ClaimsWhenScaled != "" {
		r.WhenScaled = p.ClaimsWhenScaled
	}
	return &r
}

// claimArgs pass the agent the claims it uses its Pod's own of.
func (p Params) claimArgs() []string {
	if len(p.ReplicaClaims) == 0 {
		return nil
	}
	return []string{"--" + contract.FlagReplicaClaims + "=" + strings.Join(p.replicaClaimNames(), ",")}
}
