//go:build e2e

package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// unpullable is a containerDisk image the real node cannot pull: its
// registry is a closed port on loopback, so the pull fails at once and no
// request leaves the machine.
const unpullable = "127.0.0.1:1/vmctl/no-such-disk:1"

// TestUnpullableImageSaysWhy: the real kubelet cannot pull the VM's
// containerDisk, KubeVirt's virt-controller names the VM ErrImagePull or
// ImagePullBackOff, and status's PROBLEM and the agent's Event say so at
// once with the kubelet's cause; `kubectl describe vmi`, which the
// troubleshooting table gives for it, works.
func TestUnpullableImageSaysWhy(t *testing.T) {
	ns := namespace(t)
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.ContainerDisk != nil {
				v.ContainerDisk.Image = unpullable
			}
		}
	})
	deploy(t, ns, scaffold.KindDeployment, "testvm")
	var problem string
	eventually(t, settle, "status to name the image pull", func(context.Context) (bool, string, error) {
		out, stderr, code := runCode(t, nil, e.binary, "status", "-n", ns, "-o", "json")
		if code != 0 {
			return false, stderr, nil
		}
		var list struct{ Items []status.Row }
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, "", err
		}
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d rows", len(list.Items)), nil
		}
		r := list.Items[0]
		for _, p := range r.Problems {
			if strings.HasPrefix(p, stuck.ImagePull+": ") && strings.Contains(p, "127.0.0.1:1") {
				problem = p
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("VM %s %s, problems %q", r.VM, r.VMStatus, r.Problems), nil
	})
	t.Logf("status: %s", problem)
	if _, _, code := runCode(t, nil, e.binary, "status", "-n", ns, "--exit-code"); code != 1 {
		t.Errorf("status --exit-code: exit %d, want 1", code)
	}
	eventually(t, settle, "the agent's "+stuck.ReasonImagePull+" Event", func(ctx context.Context) (bool, string, error) {
		evs, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", stuck.ReasonImagePull).String(),
		})
		if err != nil {
			return false, "", err
		}
		var msgs []string
		for _, ev := range evs.Items {
			msgs = append(msgs, ev.Message)
			if strings.HasPrefix(ev.Message, stuck.ImagePull+": ") && ev.InvolvedObject.Kind == "Pod" {
				return true, "", nil
			}
		}
		return false, strings.Join(msgs, " | "), nil
	})
	vms, err := e.virt.KubevirtV1().VirtualMachines(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms.Items {
		if vm.Name == "testvm" {
			continue
		}
		if out, stderr, code := kubectl(t, nil, "describe", "vmi", vm.Name, "-n", ns); code != 0 || out == "" {
			t.Errorf("kubectl describe vmi %s: exit %d: %s", vm.Name, code, stderr)
		}
	}
}
