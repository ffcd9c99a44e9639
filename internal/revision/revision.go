package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// hashLength is how many hex digits of the content's SHA-256 name a
// revision: 40 bits, for the few revisions one workload keeps.
const hashLength = 10

// Revision is one pinned snapshot of a prototype: a VirtualMachine with
// only what derive reads, its name, namespace, UID, generation, labels,
// annotations and spec, and no status.
type Revision = kubevirtv1.VirtualMachine

// Snapshot is the Revision of proto, whose spec KubeVirt has expanded
// (its instancetype and preference applied; see the callers): proto's
// identity, labels, the annotations derive carries over, and that spec.
// It never modifies proto.
func Snapshot(proto *kubevirtv1.VirtualMachine) *Revision {
	return &Revision{
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
}

// Hash names r by its content: what its VMs are made of, its name,
// namespace, labels, annotations and spec. The prototype's UID and
// generation are left out: a prototype edited and edited back, or deleted
// and made again the same, yields the same revision.
func Hash(r *Revision) (string, error) {
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
