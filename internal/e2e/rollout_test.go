//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// fleetWatch follows every derived VM of a namespace from one
// resourceVersion on, so it sees each moment of a rollout in order: after
// every event it counts the VMs that are ready and not being deleted.
type fleetWatch struct {
	mu  sync.Mutex
	vms map[string]*kubevirtv1.VirtualMachine
	// minReady is the fewest ready VMs seen at any moment, and when.
	minReady int
	minAt    string
	// firstOf lists the Pods whose VM of another revision than old
	// appeared, in order.
	old     string
	firstOf []string
	stop    func()
	closing atomic.Bool
	done    chan struct{}
}

// watchFleet starts following ns's derived VMs; it counts the VMs of
// another revision than old as they appear.
func watchFleet(t *testing.T, ns string, old string) *fleetWatch {
	t.Helper()
	list, err := e.virt.KubevirtV1().VirtualMachines(ns).List(t.Context(), metav1.ListOptions{LabelSelector: derive.DerivedSelector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.virt.KubevirtV1().VirtualMachines(ns).Watch(context.Background(), metav1.ListOptions{
		LabelSelector: derive.DerivedSelector, ResourceVersion: list.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fleetWatch{vms: map[string]*kubevirtv1.VirtualMachine{}, old: old, stop: w.Stop, done: make(chan struct{})}
	for i := range list.Items {
		f.vms[list.Items[i].Name] = &list.Items[i]
	}
	f.minReady, f.minAt = f.ready(), "before the rollout"
	go func() {
		defer close(f.done)
		for ev := range w.ResultChan() {
			vm, ok := ev.Object.(*kubevirtv1.VirtualMachine)
			if !ok {
				if !f.closing.Load() {
					t.Errorf("watch event %s: %v", ev.Type, ev.Object)
				}
				continue
			}
			f.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(f.vms, vm.Name)
			} else {
				if _, seen := f.vms[vm.Name]; (!seen || f.vms[vm.Name].UID != vm.UID) && vm.Annotations[contract.AnnotationVMRevision] != f.old {
					f.firstOf = append(f.firstOf, vm.Annotations[contract.AnnotationPodName])
				}
				f.vms[vm.Name] = vm
			}
			if n := f.ready(); n < f.minReady {
				f.minReady, f.minAt = n, fmt.Sprintf("after %s of %s (resourceVersion %s)", ev.Type, vm.Name, vm.ResourceVersion)
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(f.close)
	return f
}

// ready counts the VMs that are ready and not being deleted. Call with mu held.
func (f *fleetWatch) ready() int {
	n := 0
	for _, vm := range f.vms {
		if vm.Status.Ready && vm.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func (f *fleetWatch) close() {
	if f.closing.Swap(true) {
		return
	}
	f.stop()
	<-f.done
}

// settled waits until the watch saw want VMs, all ready and of another
// revision than old, and returns them.
func (f *fleetWatch) settled(t *testing.T, want int) map[string]*kubevirtv1.VirtualMachine {
	t.Helper()
	var out map[string]*kubevirtv1.VirtualMachine
	eventually(t, settle, fmt.Sprintf("the watch sees %d ready VMs of another revision than %s", want, f.old), func(context.Context) (bool, string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var seen []string
		ok := len(f.vms) == want
		for name, vm := range f.vms {
			r := vm.Annotations[contract.AnnotationVMRevision]
			seen = append(seen, fmt.Sprintf("%s revision=%s ready=%v deleting=%v", name, r, vm.Status.Ready, vm.DeletionTimestamp != nil))
			ok = ok && r != f.old && vm.Status.Ready && vm.DeletionTimestamp == nil
		}
		slices.Sort(seen)
		out = maps.Clone(f.vms)
		return ok, strings.Join(seen, "; "), nil
	})
	return out
}

// changePrototype gives the prototype in ns 512Mi instead of 256Mi and
// returns its new generation.
func changePrototype(t *testing.T, ns string) int64 {
	t.Helper()
	vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Patch(t.Context(), "testvm", types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"512Mi"}}}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return vm.Generation
}

// TestRolloutRestart changes the prototype under each kind of workload, runs
// rollout restart and rollout status, and checks from a watch of the VMs
// that at no moment fewer than all but one were ready (the workload's
// strategy lets one Pod, so one VM, be unavailable at a time), that at the
// end every VM carries the new spec and revision, and that a second
// restart does nothing.
func TestRolloutRestart(t *testing.T) {
	for _, tt := range []struct {
		kind     scaffold.Kind
		replicas int
		flags    []string
		// strategy, when set, is merged into the workload's spec.
		strategy string
		// ordered: Pods are replaced from the highest ordinal down.
		ordered bool
	}{
		{kind: scaffold.KindDeployment, replicas: 4, flags: []string{"--replicas", "4"},
			strategy: `{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":1,"maxSurge":1}}}}`},
		{kind: scaffold.KindStatefulSet, replicas: 4, flags: []string{"--replicas", "4"}, ordered: true},
		{kind: scaffold.KindDaemonSet, replicas: nodes},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			ns := namespace(t)
			createPrototype(t, ns, "testvm.yaml")
			deploy(t, ns, tt.kind, "testvm", tt.flags...)
			workload := strings.ToLower(string(tt.kind)) + "/vmctl-testvm"
			kindName := strings.ToLower(string(tt.kind)) + ".apps/vmctl-testvm"
			if tt.strategy != "" {
				kubectl(t, nil, "patch", "-n", ns, workload, "--type", "merge", "-p", tt.strategy)
			}
			before := waitPaired(t, ns, "testvm", tt.replicas, settle)
			// Every Pod Ready too (the readiness probe follows the VM a
			// moment later): a workload replaces unready Pods at once.
			vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "1m")
			old := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]

			// Nothing changed yet: nothing to restart.
			out := vmctl(t, "rollout", "restart", "testvm", "-n", ns)
			if want := fmt.Sprintf("%s unchanged (pins VM revision %s of prototype %s/testvm already)\n", kindName, old, ns); out != want {
				t.Errorf("rollout restart before any change printed %q, want %q", out, want)
			}

			changePrototype(t, ns)
			fleet := watchFleet(t, ns, old)
			start := time.Now()
			out = vmctl(t, "rollout", "restart", "testvm", "-n", ns)
			if want := "vmrevisionstore.vmctl.kubevirt.io/vmctl-testvm-vm-revisions configured\n" + kindName + " restarted\n"; out != want {
				t.Errorf("rollout restart printed %q, want %q", out, want)
			}
			rev := podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]
			status, _, code := vmctlCode(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
			took := time.Since(start)
			if code != 0 {
				t.Fatalf("rollout status exited %d:\n%s", code, status)
			}
			lines := strings.Split(strings.TrimSpace(status), "\n")
			wantLast := fmt.Sprintf("%q successfully rolled out: %d VMs ready of VM revision %s", "vmctl-testvm", tt.replicas, rev)
			if !strings.HasSuffix(lines[len(lines)-1], wantLast) {
				t.Errorf("rollout status ended with %q, want it to end with %q; all of it:\n%s", lines[len(lines)-1], wantLast, status)
			}
			t.Logf("restart to status done: %v; status printed:\n%s", took.Round(100*time.Millisecond), status)

			after := fleet.settled(t, tt.replicas)
			fleet.close()
			if fleet.minReady < tt.replicas-1 {
				t.Errorf("%d ready VMs %s: the strategy allows one unavailable of %d", fleet.minReady, fleet.minAt, tt.replicas)
			}
			t.Logf("fewest ready VMs during the rollout: %d (%s)", fleet.minReady, fleet.minAt)
			for name, vm := range after {
				if got := vm.Spec.Template.Spec.Domain.Memory.Guest.String(); got != "512Mi" {
					t.Errorf("VM %s has guest memory %s, want the new prototype's 512Mi", name, got)
				}
				if got := vm.Annotations[contract.AnnotationVMRevision]; got != rev {
					t.Errorf("VM %s is of revision %s, want %s", name, got, rev)
				}
				if b, ok := before[vm.Annotations[contract.AnnotationPodName]]; ok && b.UID == vm.UID {
					t.Errorf("VM %s was not replaced", name)
				}
			}
			if len(fleet.firstOf) != tt.replicas {
				t.Errorf("VMs of revision %s appeared for %q, want %d", rev, fleet.firstOf, tt.replicas)
			}
			if tt.ordered {
				want := []string{"vmctl-testvm-3", "vmctl-testvm-2", "vmctl-testvm-1", "vmctl-testvm-0"}
				if !slices.Equal(want, fleet.firstOf) {
					t.Errorf("new VMs appeared for %q, want the StatefulSet's order %q", fleet.firstOf, want)
				}
			}
			waitPaired(t, ns, "testvm", tt.replicas, settle)

			// Again: nothing changed, nothing happens.
			tmpl := podTemplateAnnotations(t, ns, workload)
			if tmpl[rollout.AnnotationRestartedAt] == "" {
				t.Errorf("pod template annotations %v: want the restart recorded", tmpl)
			}
			out = vmctl(t, "rollout", "restart", "testvm", "-n", ns)
			if want := fmt.Sprintf("%s unchanged (pins VM revision %s of prototype %s/testvm already)\n", kindName, rev, ns); out != want {
				t.Errorf("second rollout restart printed %q, want %q", out, want)
			}
			if again := podTemplateAnnotations(t, ns, workload); again[rollout.AnnotationRestartedAt] != tmpl[rollout.AnnotationRestartedAt] {
				t.Errorf("the second restart changed the Pod template: restartedAt %s -> %s", tmpl[rollout.AnnotationRestartedAt], again[rollout.AnnotationRestartedAt])
			}

			// Its manifests applied again, scaffolded from the prototype as
			// it is: the template rollout restart wrote is the one scaffold
			// writes, so nothing rolls out again.
			template := func() string {
				return kubectl(t, nil, "get", "-n", ns, workload, "-o", "jsonpath={.spec.template}")
			}
			restarted := template()
			deploy(t, ns, tt.kind, "testvm", tt.flags...)
			if applied := template(); applied != restarted {
				t.Errorf("applying scaffold's output after rollout restart changed the Pod template, which rolls every VM out again:\n%s\nwas\n%s", applied, restarted)
			}
		})
	}
}

// podTemplateAnnotations reads a workload's Pod template annotations.
func podTemplateAnnotations(t *testing.T, ns, workload string) map[string]string {
	t.Helper()
	out := kubectl(t, nil, "get", "-n", ns, workload, "-o", "go-template={{range $k, $v := .spec.template.metadata.annotations}}{{$k}}={{$v}}\n{{end}}")
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}
