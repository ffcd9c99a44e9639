package revision

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// The revision store's kind: a namespaced custom resource of vmctl's own
// (StoreCRD), not a ControllerRevision. The API server's informer of a
// built-in parameter kind of an admission policy stops for good once no
// binding uses that kind (kubernetes/kubernetes#130887), and the create
// policy's parameter is the store; a custom resource's informer is not
// affected.
const (
	StoreGroup    = "vmctl.kubevirt.io"
	StoreVersion  = "v1alpha1"
	StoreKind     = "VMRevisionStore"
	StoreResource = "vmrevisionstores"
)

// StoreSelector selects the workloads' revision stores.
const StoreSelector = contract.LabelComponent + "=" + contract.ComponentVMRevisions

// StoreGVR is the revision stores' resource, for the dynamic client.
var StoreGVR = schema.GroupVersionResource{Group: StoreGroup, Version: StoreVersion, Resource: StoreResource}

// Store is a workload's revision store: every revision its retained
// templates name, by hash. It lives in one VMRevisionStore (Object), which
// the create policy reads by name as its parameter, so that a revision's
// existence and its content are one object: a VM that claims a revision the
// store lacks is refused, never judged against nothing. The API server
// refuses a change to a revision the store retains (StoreCRD), so the store
// is updated in place.
type Store struct {
	// Name and Namespace are the VMRevisionStore's: StoreName of the
	// workload, beside it.
	Name, Namespace string
	// Workload is the name of the workload whose templates the revisions
	// are of.
	Workload string
	// Revisions are the VM revisions, snapshots (see Snapshot), by hash.
	Revisions map[string]*kubevirtv1.VirtualMachine
}

// storeSpec is the VMRevisionStore's spec. Its field names are what the
// create policy's CEL reads: spec.revisions[<hash>].
type storeSpec struct {
	Revisions map[string]stored `json:"revisions"`
}

// stored is a VM revision as the store holds it: a VirtualMachine but for its
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
	return &Store{Name: StoreName(workload), Namespace: namespace, Workload: workload, Revisions: map[string]*kubevirtv1.VirtualMachine{}}
}

// Hashes are the store's revisions' hashes, sorted.
func (s *Store) Hashes() []string { return slices.Sorted(maps.Keys(s.Revisions)) }

// Retain keeps only the revisions whose hash is in keep, and reports
// whether any went.
func (s *Store) Retain(keep map[string]bool) bool {
	n := len(s.Revisions)
	maps.DeleteFunc(s.Revisions, func(h string, _ *kubevirtv1.VirtualMachine) bool { return !keep[h] })
	return len(s.Revisions) != n
}

// Object is s as the VMRevisionStore that holds it, labelled as vmctl's.
// Its labels never match the workload's selector (which has
// contract.LabelInstance), and it has no owner: deleting the workload
// leaves the revisions its orphaned Pods pin (gc prunes them).
//
// Null values are left out: the API server prunes them from a custom
// resource, and the stored revision would then differ from what was
// written, which the store's rule that a retained revision never changes
// would refuse on the next write.
func (s *Store) Object() (*unstructured.Unstructured, error) {
	spec := storeSpec{Revisions: make(map[string]stored, len(s.Revisions))}
	for h, r := range s.Revisions {
		spec.Revisions[h] = stored{TypeMeta: r.TypeMeta, Metadata: r.ObjectMeta, Spec: r.Spec}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode the revision store %s/%s: %w", s.Namespace, s.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("encode the revision store %s/%s: %w", s.Namespace, s.Name, err)
	}
	dropNulls(m)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	u.SetAPIVersion(StoreGroup + "/" + StoreVersion)
	u.SetKind(StoreKind)
	u.SetName(s.Name)
	u.SetNamespace(s.Namespace)
	u.SetLabels(map[string]string{
		contract.LabelName:      contract.AppName,
		contract.LabelManagedBy: contract.ManagedBy,
		contract.LabelComponent: contract.ComponentVMRevisions,
		contract.LabelWorkload:  s.Workload,
	})
	return u, nil
}

// dropNulls deletes, recursively, the keys of m whose value is null.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, e := range v {
				if e, ok := e.(map[string]any); ok {
					dropNulls(e)
				}
			}
		}
	}
}

// FromObject reads the store u holds.
func FromObject(u *unstructured.Unstructured) (*Store, error) {
	s := &Store{Name: u.GetName(), Namespace: u.GetNamespace(), Workload: u.GetLabels()[contract.LabelWorkload]}
	var spec storeSpec
	if m, ok := u.Object["spec"]; ok && m != nil {
		data, err := json.Marshal(m)
		if err == nil {
			err = json.Unmarshal(data, &spec)
		}
		if err != nil {
			return nil, fmt.Errorf("the revision store %s/%s holds no revisions vmctl can read: %w", s.Namespace, s.Name, err)
		}
	}
	s.Revisions = make(map[string]*kubevirtv1.VirtualMachine, len(spec.Revisions))
	for h, r := range spec.Revisions {
		s.Revisions[h] = &kubevirtv1.VirtualMachine{TypeMeta: r.TypeMeta, ObjectMeta: r.Metadata, Spec: r.Spec}
	}
	return s, nil
}
