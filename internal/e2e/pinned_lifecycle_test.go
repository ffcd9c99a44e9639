//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestFleetFromGit keeps a fleet as a Git repository would: the files
// scaffold printed, then the ones rollout restart --dry-run=client -o yaml
// printed after a prototype edit. Applying the second rolls the edit out;
// applying the first again is an undo; and on a namespace emptied of the
// fleet and its prototype, applying the prototype and the first files
// brings back VMs equal to the first ones, of the same revision, whose
// prototype status then finds unchanged (a revision names content, which
// a prototype made again has too).
func TestFleetFromGit(t *testing.T) {
	ns := namespace(t)
	addNodesOfSize(t, ns, sizedNodeNames(ns, 0, 2), "8", "16Gi")
	sizedPrototype(t, ns, "256Mi")
	const workload = "deployment/vmctl-testvm"
	commit1 := vmctl(t, "scaffold", "deployment", "testvm", "-n", ns, "--grace-period", "60", "--replicas", "2")
	kubectl(t, []byte(commit1), "apply", "-f", "-")
	first := waitRevision(t, ns, workload, 2, "")
	firstSpecs := vmSpecs(t, ns)

	changePrototype(t, ns)
	commit2 := vmctl(t, "rollout", "restart", "testvm", "-n", ns, "--dry-run=client", "-o", "yaml")
	for _, want := range []string{"kind: VMRevisionStore", "kind: Deployment", "vmctl.kubevirt.io/vm-revision: "} {
		if !strings.Contains(commit2, want) {
			t.Fatalf("rollout restart --dry-run=client -o yaml lacks %q:\n%s", want, commit2)
		}
	}
	if got := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]; got != first {
		t.Fatalf("a client-side dry run changed the template's revision %s to %s", first, got)
	}
	kubectl(t, []byte(commit2), "apply", "-f", "-")
	second := waitRevision(t, ns, workload, 2, "")
	if second == first {
		t.Fatalf("applying the restart's files kept revision %s", first)
	}
	for name, spec := range vmSpecs(t, ns) {
		if spec.memory != "512Mi" {
			t.Errorf("VM %s after applying the restart's files: memory %s, want the edited prototype's 512Mi", name, spec.memory)
		}
	}

	// The older commit again is an undo.
	kubectl(t, []byte(commit1), "apply", "-f", "-")
	waitRevision(t, ns, workload, 2, first)
	waitPaired(t, ns, "testvm", 2, settle)
	for name, spec := range vmSpecs(t, ns) {
		if spec.memory != "256Mi" {
			t.Errorf("VM %s after applying the first files again: memory %s, want the first revision's 256Mi", name, spec.memory)
		}
	}

	// From Git alone: the fleet and its prototype gone, then applied again.
	kubectl(t, nil, "delete", "-n", ns, workload, "vm/testvm", "vmrevisionstore/"+revision.StoreName("vmctl-testvm"), "--wait=true")
	eventually(t, settle, "the fleet's VMs gone", func(ctx context.Context) (bool, string, error) {
		vms, err := derivedVMs(ctx, ns)
		return err == nil && len(vms) == 0, fmt.Sprintf("%d VMs", len(vms)), err
	})
	sizedPrototype(t, ns, "256Mi")
	kubectl(t, []byte(commit1), "apply", "-f", "-")
	if got := waitRevision(t, ns, workload, 2, ""); got != first {
		t.Errorf("the first files on an emptied namespace pin %s, want %s", got, first)
	}
	var want vmSpec
	for _, want = range firstSpecs {
		break // the first VMs are all alike
	}
	for _, spec := range vmSpecs(t, ns) {
		if spec.memory != want.memory || fmt.Sprint(spec.labels) != fmt.Sprint(want.labels) {
			t.Errorf("a VM made from Git: memory %s, labels %v; want the first VMs' %s, %v", spec.memory, spec.labels, want.memory, want.labels)
		}
	}
	if _, stderr, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 0 || strings.Contains(stderr, "has changed") {
		t.Errorf("status of a fleet whose prototype was made again the same exited %d, saying %q", code, stderr)
	}
}

// TestPrototypeGoneUnderAPinnedFleet deletes the prototype of a running,
// pinned fleet: it scales on with VMs of the pinned revision, since its
// agents never read the prototype; rollout restart says there is nothing
// to roll out and exits 1. Made again the same, the prototype is the
// revision pinned already, so a restart changes nothing; made again
// changed, a restart rolls it out.
func TestPrototypeGoneUnderAPinnedFleet(t *testing.T) {
	ns := namespace(t)
	addNodesOfSize(t, ns, sizedNodeNames(ns, 0, 2), "8", "16Gi")
	sizedPrototype(t, ns, "256Mi")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	const workload = "deployment/vmctl-testvm"
	first := waitRevision(t, ns, workload, 2, "")

	kubectl(t, nil, "delete", "vm", "testvm", "-n", ns)
	scale(t, ns, "vmctl-testvm", 3)
	waitRevision(t, ns, workload, 3, first)
	for name, spec := range vmSpecs(t, ns) {
		if spec.memory != "256Mi" {
			t.Errorf("VM %s made with its prototype gone: memory %s, want the pinned revision's 256Mi", name, spec.memory)
		}
	}
	out, stderr, code := vmctlCode(t, "rollout", "restart", "testvm", "-n", ns)
	if code != 1 || !strings.Contains(stderr, "prototype "+ns+"/testvm not found; nothing to roll out") {
		t.Errorf("rollout restart without its prototype exited %d, printed %q, %q", code, out, stderr)
	}

	sizedPrototype(t, ns, "256Mi")
	out = vmctl(t, "rollout", "restart", "testvm", "-n", ns)
	if !strings.Contains(out, "unchanged") {
		t.Errorf("rollout restart of a prototype made again the same printed %q, want it unchanged", out)
	}
	if got := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]; got != first {
		t.Errorf("the template pins %s after restarting a prototype made again the same, want %s", got, first)
	}

	changePrototype(t, ns)
	vmctl(t, "rollout", "restart", "testvm", "-n", ns)
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
	if got := waitRevision(t, ns, workload, 3, ""); got == first {
		t.Errorf("rollout restart of the prototype made again changed kept revision %s", first)
	}
	for name, spec := range vmSpecs(t, ns) {
		if spec.memory != "512Mi" {
			t.Errorf("VM %s after the restart: memory %s, want 512Mi", name, spec.memory)
		}
	}
}

// TestUnpinnedTemplateIsRefused runs a workload whose templates pin no VM
// revision (no store, no revision in the template, no rule to read a
// store: a template written by hand): its agents make no VM, not even of
// the live prototype, and status names every Pod with the stuck state and
// its fix.
func TestUnpinnedTemplateIsRefused(t *testing.T) {
	ns := namespace(t)
	addNodesOfSize(t, ns, sizedNodeNames(ns, 0, 2), "8", "16Gi")
	sizedPrototype(t, ns, "256Mi")
	manifests := vmctl(t, "scaffold", "deployment", "testvm", "-n", ns, "--grace-period", "60", "--replicas", "2", "--admission-policy=false")
	unpinnedManifests, err := withoutPin(manifests)
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, []byte(unpinnedManifests), "apply", "-f", "-")
	const problem = "no VM revision pinned: kubectl vmctl rollout restart testvm"
	eventually(t, settle, "status names both Pods not pinned", func(context.Context) (bool, string, error) {
		out, _, _ := vmctlCode(t, "status", "-n", ns)
		return strings.Count(out, problem) == 2, out, nil
	})
	vms, err := e.virt.KubevirtV1().VirtualMachines(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelPrototype})
	if err != nil {
		t.Fatal(err)
	}
	if len(vms.Items) != 0 {
		t.Errorf("%d VMs of Pods that pin no revision, want none", len(vms.Items))
	}
}

// withoutPin is manifests as a template written by hand might be, pinning
// no VM revision: without the revision store, the workload's pin (the
// template's annotation and change-cause, the agent's --vm-revisions and
// its variable) and the Role's rule for the store. It returns one JSON List.
func withoutPin(manifests string) (string, error) {
	return editManifests(manifests, func(obj map[string]any) (bool, error) {
		switch obj["kind"] {
		case "VMRevisionStore", "CustomResourceDefinition":
			return false, nil
		case "Role":
			var rules []any
			for _, r := range obj["rules"].([]any) {
				if !strings.Contains(fmt.Sprint(r), "vmrevisionstores") {
					rules = append(rules, r)
				}
			}
			obj["rules"] = rules
		case "Deployment":
			unpin(obj)
		}
		return true, nil
	})
}

// unpin takes the pin out of a scaffolded workload's object.
func unpin(obj map[string]any) {
	delete(obj["metadata"].(map[string]any)["annotations"].(map[string]any), "kubernetes.io/change-cause")
	tmpl := obj["spec"].(map[string]any)["template"].(map[string]any)
	delete(tmpl["metadata"].(map[string]any)["annotations"].(map[string]any), contract.AnnotationVMRevision)
	for _, c := range tmpl["spec"].(map[string]any)["containers"].([]any) {
		c := c.(map[string]any)
		var args, env []any
		for _, a := range c["args"].([]any) {
			if !strings.HasPrefix(a.(string), "--vm-revisions") {
				args = append(args, a)
			}
		}
		for _, v := range c["env"].([]any) {
			if v.(map[string]any)["name"] != "VMCTL_VM_REVISION" {
				env = append(env, v)
			}
		}
		c["args"], c["env"] = args, env
	}
}
