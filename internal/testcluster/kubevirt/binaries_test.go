package kubevirt

import (
	"path/filepath"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// A build of a release with cgo and one without are different builds: a
// cached one must not stand in for the other.
func TestBuildKeyCoversCgoAndTags(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	keyOf := func(r Release) string {
		t.Helper()
		key, err := buildKey(toolsDir, r)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	base := keyOf(Oldest)
	withoutCgo := Oldest
	withoutCgo.Cgo = !Oldest.Cgo
	if keyOf(withoutCgo) == base {
		t.Errorf("the build key of %s does not change with cgo", Oldest.ModFile)
	}
	otherTags := Oldest
	otherTags.Tags = "other"
	if keyOf(otherTags) == base {
		t.Errorf("the build key of %s does not change with its tags", Oldest.ModFile)
	}
	if keyOf(Oldest) != base {
		t.Errorf("the build key of %s changes between two reads", Oldest.ModFile)
	}
}

// The real node's release builds its virt-api and virt-controller as its
// node side is built, with cgo, so the two builds share Go's build cache.
func TestNodeReleaseBuildsWithCgo(t *testing.T) {
	if !NodeRelease.Cgo {
		t.Errorf("NodeRelease (%s) builds virt-api and virt-controller without cgo; its node side's build would compile KubeVirt's dependencies again", NodeRelease.ModFile)
	}
}

// The releases that are not the node's build as Newest does, without cgo,
// so the many packages they share with it come from Go's build cache.
func TestOtherReleasesBuildAsNewest(t *testing.T) {
	for _, r := range Releases {
		if r != NodeRelease && r.Cgo != Newest.Cgo {
			t.Errorf("%s builds with cgo=%t, Newest with cgo=%t: their shared packages would compile twice", r.ModFile, r.Cgo, Newest.Cgo)
		}
	}
}
