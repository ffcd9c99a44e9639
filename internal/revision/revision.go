package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// hashLength is how many hex digits of the content's SHA-256 name a
// revision: 40 bits, for the few revisions one workload keeps.
const hashLength = 10

// Snapshot is the VM revision of proto, whose spec KubeVirt has expanded
// (its instancetype and preference applied; see the callers): a
// VirtualMachine with only what derive reads, proto's identity (name,
// namespace, UID, generation), labels, the annotations derive carries
// over, and that spec without its machine identity, and no status. It is
// a plain VirtualMachine so that derive takes a snapshot as it takes a
// prototype. It never modifies proto.
func Snapshot(proto *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	r := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        proto.Name,
			Namespace:   proto.Namespace,
			UID:         proto.UID,
			Generation:  proto.Generation,
			Labels:      maps.Clone(proto.Labels),
			Annotations: derive.CarriedAnnotations(proto.Annotations),
		},
		Spec: *proto.Spec.DeepCopy(),
	}
	dropMachineIdentity(&r.Spec)
	return r
}

// dropMachineIdentity clears the firmware UUID and serial. KubeVirt gives
// every VM a random UUID of its own (VEP 14), the prototype
// included, and every derived VM gets its Pod's UID as both instead
// (derive), so they are no part of what its VMs are made of: kept, the
// same prototype applied to two clusters would hash apart, and a store
// written on one would clash with the same revision scaffolded on the
// other.
func dropMachineIdentity(spec *kubevirtv1.VirtualMachineSpec) {
	if spec.Template == nil || spec.Template.Spec.Domain.Firmware == nil {
		return
	}
	fw := spec.Template.Spec.Domain.Firmware
	fw.UUID, fw.Serial = "", ""
	if apiequality.Semantic.DeepEqual(*fw, kubevirtv1.Firmware{}) {
		spec.Template.Spec.Domain.Firmware = nil
	}
}

// Hash names r by its content: what its VMs are made of, its name,
// namespace, labels, annotations and spec. The prototype's UID and
// generation are left out: a prototype edited and edited back, or deleted
// and made again the same, yields the same revision.
func Hash(r *kubevirtv1.VirtualMachine) (string, error) {
	content := struct {
		Name        string                        `json:"name"`
		Namespace   string                        `json:"namespace"`
		Labels      map[string]string             `json:"labels,omitempty"`
		Annotations map[string]string             `json:"annotations,omitempty"`
		Spec        kubevirtv1.VirtualMachineSpec `json:"spec"`
	}{r.Name, r.Namespace, r.Labels, r.Annotations, r.Spec}
	// encoding/json writes map keys sorted, so equal content hashes equal.
	data, err := json.Marshal(content)
	if err != nil {
		return "", fmt.Errorf("hash the revision of prototype %s/%s: %w", r.Namespace, r.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:hashLength], nil
}
