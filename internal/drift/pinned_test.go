package drift

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// pinnedScene is prototype vms/fedora, the revision of it that workload
// web's store holds, and the prototype edited since (16 cores).
func pinnedScene(t *testing.T) (rev *kubevirtv1.VirtualMachine, hash string, store runtime.Object, edited *kubevirtv1.VirtualMachine) {
	t.Helper()
	proto := loadPrototype(t)
	proto.Spec.DataVolumeTemplates = nil
	proto.Spec.Template.Spec.Volumes = proto.Spec.Template.Spec.Volumes[:1]
	proto.Spec.Template.Spec.Domain.Devices.Disks = proto.Spec.Template.Spec.Domain.Devices.Disks[:1]
	rev = revision.Snapshot(proto)
	store, hash = storeOf(t, "web", rev)
	edited = proto.DeepCopy()
	edited.Spec.Template.Spec.Domain.CPU.Cores = 16
	return rev, hash, store, edited
}

// storeOf is the revision store of workload in vms holding rev, and rev's
// hash.
func storeOf(t *testing.T, workload string, rev *kubevirtv1.VirtualMachine) (runtime.Object, string) {
	t.Helper()
	hash, err := revision.Hash(rev)
	if err != nil {
		t.Fatal(err)
	}
	s := revision.NewStore("vms", workload)
	s.Revisions[hash] = rev
	cr, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	return cr, hash
}

// pinnedFor is the stored VM the agent of Pod vms/pod, pinned to revision
// hash, made from rev; one that records no revision when hash is "".
func pinnedFor(t *testing.T, rev *kubevirtv1.VirtualMachine, hash, pod string) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(rev, derive.Pod{Name: pod, Namespace: "vms", UID: types.UID("uid-" + pod), Node: "node-a"}, derive.Options{VMRevisionHash: hash})
	if err != nil {
		t.Fatal(err)
	}
	return asStored(vm)
}

// TestEachPinned: a VM that records a revision is compared with that
// revision as its Pod's namespace's stores hold it, whatever the
// prototype is now; the stores are read once per namespace (once in all
// with -A), and the prototype never. A VM that records no revision is
// not compared, and its error says what puts it right.
func TestEachPinned(t *testing.T) {
	rev, hash, store, edited := pinnedScene(t)
	asDerived := pinnedFor(t, rev, hash, "web-0")
	byHand := pinnedFor(t, rev, hash, "web-1")
	byHand.Spec.Template.Spec.Domain.CPU.Cores = 3
	pruned := pinnedFor(t, rev, "0000000000", "web-2")
	unpinned := pinnedFor(t, rev, "", "old-0")
	objs := []runtime.Object{edited, asDerived, byHand, pruned, unpinned}

	for _, tt := range []struct {
		namespace string
		wantCalls []string
	}{{
		namespace: "vms",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms app.kubernetes.io/component=vm-revisions",
		},
	}, {
		wantCalls: []string{
			"list virtualmachines  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores  app.kubernetes.io/component=vm-revisions",
		},
	}} {
		t.Run("namespace "+tt.namespace, func(t *testing.T) {
			s, _, calls := fakeSources(tt.namespace == "", objs, store)
			checks := map[string]Check{}
			for _, c := range each(t, s, tt.namespace, "") {
				checks[c.Name] = c
			}
			want := []outcome{
				{Name: "vms/fedora-old-0", Err: "no VM revision recorded, so no agent of this vmctl made the VM as it is (a copy, or edited by hand?); " +
					"where a Pod owns it, `kubectl vmctl rollout restart fedora` replaces that Pod, and the VM with one of a pinned revision"},
				{Name: "vms/fedora-web-0"},
				{Name: "vms/fedora-web-1", Drifted: true},
				{Name: "vms/fedora-web-2", Err: "VM revision 0000000000 of prototype vms/fedora is in no revision store of the Pod's namespace (pruned?); " +
					"`kubectl vmctl rollout restart fedora` pins a new one"},
			}
			var got []Check
			for _, name := range slices.Sorted(maps.Keys(checks)) {
				got = append(got, checks[name])
			}
			if diff := cmp.Diff(want, outcomes(got)); diff != "" {
				t.Errorf("Each (-want +got):\n%s", diff)
			}
			if c := checks["fedora-web-1"]; c.Revision != hash || c.Generation != rev.Generation ||
				!strings.Contains(c.Diff, "+++ vms/fedora-web-1 (derived from VM revision "+hash+" of vms/fedora)") ||
				!strings.Contains(c.Diff, "-          cores: 3") {
				t.Errorf("the VM changed by hand, revision %q generation %d:\n%s", c.Revision, c.Generation, c.Diff)
			}
			if diff := cmp.Diff(tt.wantCalls, *calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckPinnedRefusesAnotherPrototypesRevision: a VM whose revision is
// a snapshot of another prototype than it records (hand edits) is not
// compared with it.
func TestCheckPinnedRefusesAnotherPrototypesRevision(t *testing.T) {
	rev, hash, _, _ := pinnedScene(t)
	live := pinnedFor(t, rev, hash, "web-0")
	other := rev.DeepCopy()
	other.Name = "db"
	c := CheckPinned(live, other, hash)
	if c.Err == nil || !strings.Contains(c.Err.Error(), "a snapshot of prototype vms/db, not of vms/fedora") {
		t.Errorf("CheckPinned with another prototype's revision: %v", c.Err)
	}
	if c := CheckPinned(live, rev, hash); c.Err != nil || c.Drifted() {
		t.Errorf("CheckPinned with its own revision: drifted %v, error %v:\n%s", c.Drifted(), c.Err, c.Diff)
	}
}
