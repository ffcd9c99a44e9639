package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// TestRevisionDiff: issue 63's case, the prototype's guest memory edited
// from 256Mi to 300Mi, reads as kubectl diff would show it; two equal
// revisions differ in nothing.
func TestRevisionDiff(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.Template.Spec.Domain.Memory.Guest = new(resource.MustParse("256Mi"))
	pinned := revision.Snapshot(proto)
	proto.Spec.Template.Spec.Domain.Memory.Guest = new(resource.MustParse("300Mi"))
	proto.Labels["tier"] = "web"
	now := revision.Snapshot(proto)

	r, err := RevisionDiff(pinned, now, "1a2b3c4d5e", "6f7a8b9c0d")
	if err != nil {
		t.Fatal(err)
	}
	got := r.Diff
	want := `--- prototype vms/fedora (VM revision 1a2b3c4d5e, pinned)
+++ prototype vms/fedora (VM revision 6f7a8b9c0d, rollout restart pins)
@@ -3,7 +3,7 @@
     description: Fedora worker
   labels:
     app: fedora
-    tier: workers
+    tier: web
 spec:
   dataVolumeTemplates:
   - metadata:
@@ -80,7 +80,7 @@
         machine:
           type: q35
         memory:
-          guest: 256Mi
+          guest: 300Mi
         resources: {}
       hostname: fedora
       networks:
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RevisionDiff (-want +got):\n%s", diff)
	}
	if r, err := RevisionDiff(pinned, pinned.DeepCopy(), "1a2b3c4d5e", "1a2b3c4d5e"); err != nil || r.Drifted() {
		t.Errorf("RevisionDiff of equal revisions = %q, %v; want nothing", r.Diff, err)
	}
}
