package revision

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Store is a workload's revision store: every revision its retained
// templates name, by hash. It lives in one ControllerRevision (Object),
// which the create policy reads by name as its parameter, so that a
// revision's existence and its content are one object: a VM that claims a
// revision the store lacks is refused, never judged against nothing.
type Store struct {
	// Name and Namespace are the ControllerRevision's: StoreName of the
	// workload, beside it.
	Name, Namespace string
	// Workload is the name of the workload whose templates the revisions
	// are of.
	Workload string
	// Number is the ControllerRevision's revision, one more with each
	// replacement.
	Number int64
	// Revisions are the revisions by hash.
	Revisions map[string]*Revision
}

// storeData is the ControllerRevision's data. Its field names are what the
// create policy's CEL reads: data.revisions[<hash>].
type storeData struct {
	Revisions map[string]stored `json:"revisions"`
}

// stored is a Revision as the store holds it: a VirtualMachine but for its
// status, which has no place in a snapshot.
type stored struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta             `json:"metadata"`
	Spec            kubevirtv1.VirtualMachineSpec `json:"spec"`
}

// StoreName is the name of the revision store of the workload called
// workload.
func StoreName(workload string) string { return workload + "-vm-revisions" }

// NewStore is the empty store of workload in namespace.
func NewStore(namespace, workload string) *Store {
	return &Store{Name: StoreName(workload), Namespace: namespace, Workload: workload, Number: 1, Revisions: map[string]*Revision{}}
}

// Add puts r in s under its hash, which it returns.
func (s *Store) Add(r *Revision) (string, error) {
	h, err := Hash(r)
	if err != nil {
		return "", err
	}
	s.Revisions[h] = r
	return h, nil
}

// Hashes are the store's revisions' hashes, sorted.
func (s *Store) Hashes() []string { return slices.Sorted(maps.Keys(s.Revisions)) }

// Retain keeps only the revisions whose hash is in keep, and reports
// whether any went.
func (s *Store) Retain(keep map[string]bool) bool {
	n := len(s.Revisions)
	maps.DeleteFunc(s.Revisions, func(h string, _ *Revision) bool { return !keep[h] })
	return len(s.Revisions) != n
}

// forceAnnotations ask GitOps tools to make the store again where they would
// patch it: its data cannot change, so an apply of a changed store fails
// otherwise (`kubectl apply --force` does the same).
var forceAnnotations = map[string]string{
	"argocd.argoproj.io/sync-options":   "Force=true,Replace=true",
	"kustomize.toolkit.fluxcd.io/force": "enabled",
}

// Object is s as the ControllerRevision that holds it. Its labels never
// match the workload's selector (which has contract.LabelInstance): a
// StatefulSet or DaemonSet controller adopts the ControllerRevisions its
// selector matches, and `kubectl rollout history` would list it. For the
// same reason it has no controller owner.
func (s *Store) Object() (*appsv1.ControllerRevision, error) {
	d := storeData{Revisions: make(map[string]stored, len(s.Revisions))}
	for h, r := range s.Revisions {
		d.Revisions[h] = stored{TypeMeta: r.TypeMeta, Metadata: r.ObjectMeta, Spec: r.Spec}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode the revision store %s/%s: %w", s.Namespace, s.Name, err)
	}
	return &appsv1.ControllerRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name,
			Namespace:   s.Namespace,
			Annotations: maps.Clone(forceAnnotations),
			Labels: map[string]string{
				contract.LabelName:      contract.AppName,
				contract.LabelManagedBy: contract.ManagedBy,
				contract.LabelComponent: contract.ComponentVMRevisions,
				contract.LabelWorkload:  s.Workload,
			},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: s.Number,
	}, nil
}

// FromObject reads the store cr holds.
func FromObject(cr *appsv1.ControllerRevision) (*Store, error) {
	s := &Store{Name: cr.Name, Namespace: cr.Namespace, Workload: cr.Labels[contract.LabelWorkload], Number: cr.Revision}
	var d storeData
	if len(cr.Data.Raw) > 0 {
		if err := json.Unmarshal(cr.Data.Raw, &d); err != nil {
			return nil, fmt.Errorf("the revision store %s/%s holds no revisions vmctl can read: %w", cr.Namespace, cr.Name, err)
		}
	}
	s.Revisions = make(map[string]*Revision, len(d.Revisions))
	for h, r := range d.Revisions {
		s.Revisions[h] = &Revision{TypeMeta: r.TypeMeta, ObjectMeta: r.Metadata, Spec: r.Spec}
	}
	return s, nil
}
