package plugin

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// opWarnedScene is opScene where agent Pod web-c waits only 20s for its VM
// (--delete-timeout), less than prototype vms/web's guest needs, and, when
// migrate is set, web asks for evictionStrategy LiveMigrate. Neither changes
// a row. It returns the prototype too.
func opWarnedScene(t *testing.T, migrate bool) (kube, virt []runtime.Object, web *kubevirtv1.VirtualMachine) {
	kube, virt = opScene(t)
	for _, obj := range kube {
		if p := obj.(*corev1.Pod); p.Name == "web-c" {
			p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--delete-timeout=20s")
		}
	}
	for _, obj := range virt {
		if vm, ok := obj.(*kubevirtv1.VirtualMachine); ok && vm.Namespace == "vms" && vm.Name == "web" {
			web = vm
		}
	}
	if migrate {
		web.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
	}
	return kube, virt, web
}

// opWebWarnings are the lines status says of opWarnedScene's prototype web.
func opWebWarnings(web *kubevirtv1.VirtualMachine) string {
	out := "Warning: prototype vms/web: " + derive.GracePeriodTooShort(web, 20*time.Second) + "\n"
	if msg := derive.EvictionStrategyOverridden(web); msg != "" {
		out += "Warning: prototype vms/web: " + msg + "\n"
	}
	return out
}

// TestStatusWarnsOncePerPrototype: what holds for a whole prototype goes to
// stderr once, however many of its agents there are, and stdout is what it
// was without the warnings, in every output format.
func TestStatusWarnsOncePerPrototype(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
		warned bool
	}{
		{golden: "status/plain.txt", warned: true},
		{golden: "status/all-namespaces.txt", args: []string{"-A"}, warned: true},
		{golden: "status/json.json", args: []string{"-o", "json"}, warned: true},
		{golden: "status/name.txt", args: []string{"-o", "name"}, warned: true},
		// Prototype team2/db gives no warning.
		{golden: "status/yaml.yaml", args: []string{"-n", "team2", "-o", "yaml"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			kube, virt, web := opWarnedScene(t, true)
			out, errOut, _, err := runStatus(t, kube, virt, tt.args...)
			if err != nil {
				t.Fatalf("status %v: %v\n%s", tt.args, err, errOut)
			}
			want := ""
			if tt.warned {
				want = opWebWarnings(web)
			}
			if errOut != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut, want)
			}
			opGolden(t, tt.golden, out)
		})
	}
}

// TestStatusWarnsBeforeTheTable: as kubectl says a server's warnings, before
// the output they come with.
func TestStatusWarnsBeforeTheTable(t *testing.T) {
	kubeObjs, virtObjs, web := opWarnedScene(t, true)
	kube, virt, _ := opFakes(kubeObjs, virtObjs)
	var both strings.Builder
	o := NewStatusOptions(genericiooptions.IOStreams{Out: &both, ErrOut: &both})
	o.Now = func() time.Time { return opNow }
	f := opFactory(t, kube, virt)
	if err := opRun(t.Context(), f, newCmdStatus(f, o)); err != nil {
		t.Fatal(err)
	}
	if got, want := both.String(), opWebWarnings(web)+"POD "; !strings.HasPrefix(got, want) {
		t.Errorf("output:\n%s\nwant it to start with:\n%s", got, want)
	}
}

// opWatch is a `status --watch` running against fakes.
type opWatch struct {
	out, errOut *opSyncBuffer
	updates     func() int // how often status computed its rows
	stop        func()
}

// startStatusWatch starts `status --watch` against fakes holding the
// objects, its stdout a terminal or not, and returns it with the fake
// KubeVirt clientset, to change the scene with.
func startStatusWatch(t *testing.T, kubeObjs, virtObjs []runtime.Object, terminal bool) (*opWatch, *kubevirtfake.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	kube, virt, _ := opFakes(kubeObjs, virtObjs)
	w := &opWatch{out: &opSyncBuffer{}, errOut: &opSyncBuffer{}}
	o := NewStatusOptions(genericiooptions.IOStreams{Out: w.out, ErrOut: w.errOut})
	var mu sync.Mutex
	n := 0
	// Every update is a minute later: on a terminal, ages change, so it
	// redraws.
	o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); n++; return opNow.Add(time.Duration(n) * time.Minute) }
	w.updates = func() int { mu.Lock(); defer mu.Unlock(); return n }
	o.Refresh, o.MinRedraw = 10*time.Millisecond, 0
	o.IsTerminal = func(io.Writer) bool { return terminal }
	f := opFactory(t, kube, opNoWatchList{virt})
	done := make(chan error, 1)
	go func() { done <- opRun(ctx, f, newCmdStatus(f, o), "--watch") }()
	w.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("status --watch returned %v after cancel", err)
		}
	}
	t.Cleanup(cancel)
	return w, virt
}

func (w *opWatch) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		t.Fatalf("%s: %v; stdout:\n%s\nstderr:\n%s", what, err, w.out.String(), w.errOut.String())
	}
}

// TestStatusWatchWarnsOnce: following a log, status says each distinct
// warning once, a new one when it comes to hold, never again at later
// updates.
func TestStatusWatchWarnsOnce(t *testing.T) {
	kube, virt, web := opWarnedScene(t, false)
	w, fake := startStatusWatch(t, kube, virt, false)
	grace := opWebWarnings(web)
	w.waitFor(t, "the grace period warning", func() bool { return w.errOut.String() == grace })

	web.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
	if _, err := fake.KubevirtV1().VirtualMachines("vms").Update(t.Context(), web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "the eviction strategy warning", func() bool { return w.errOut.String() == opWebWarnings(web) })
	seen := w.updates()
	w.waitFor(t, "ten more updates", func() bool { return w.updates() >= seen+10 })
	w.stop()
	if got, want := w.errOut.String(), opWebWarnings(web); got != want {
		t.Errorf("stderr after more updates:\n%s\nwant each warning once:\n%s", got, want)
	}
}

// TestStatusWatchFramesShowWarnings: on a terminal each redraw clears the
// screen, so each frame shows the warnings that hold, once.
func TestStatusWatchFramesShowWarnings(t *testing.T) {
	kube, virt, web := opWarnedScene(t, true)
	w, _ := startStatusWatch(t, kube, virt, true)
	const clearScreen = "\x1b[H\x1b[2J"
	w.waitFor(t, "three frames", func() bool { return strings.Count(w.out.String(), clearScreen) >= 3 })
	w.stop()
	frames, warnings := strings.Count(w.out.String(), clearScreen), strings.Count(w.errOut.String(), opWebWarnings(web))
	if frames != warnings {
		t.Errorf("%d frames, %d times the warnings; want them with each frame:\n%s", frames, warnings, w.errOut.String())
	}
}

// opPinnedScene is a Deployment web of two agents in vms that pin VM
// revision pinned of prototype vms/web (generation 5), their VMs of that
// revision, and a Deployment legacy of one agent that pins none.
func opPinnedScene(t *testing.T, pinned string) (kube, virt []runtime.Object, web *kubevirtv1.VirtualMachine) {
	t.Helper()
	web = opPrototype("vms", "web", 5)
	virt = []runtime.Object{web}
	ofDeployment := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels["pod-template-hash"] = "7865bc9459"
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-7865bc9459", Controller: ptr.To(true)}}
		}
	}
	for _, name := range []string{"web-1", "web-2"} {
		pod := opPod("vms", name, "node-1", "web", time.Hour, ofDeployment("web"), func(p *corev1.Pod) {
			p.Annotations = map[string]string{contract.AnnotationVMRevision: pinned}
			p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--vm-revisions=web-vm-revisions")
		})
		// Derived from generation 3: the revision is older than the prototype.
		vm := opDerived(t, opPrototype("vms", "web", 3), pod, time.Hour, func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations[contract.AnnotationVMRevision] = pinned
		})
		kube = append(kube, pod)
		virt = append(virt, vm, opVMI(vm, "node-1"))
	}
	legacy := opPod("vms", "legacy-1", "node-1", "web", time.Hour, ofDeployment("legacy"))
	vm := opDerived(t, web, legacy, time.Hour)
	return append(kube, legacy), append(virt, vm, opVMI(vm, "node-1")), web
}

// TestStatusPinned: Pods that pin a VM revision have no problem whatever
// the prototype is now; their workload is warned of, once, that the
// prototype changed since, and a workload that pins none is a problem on
// each of its Pods, which fails --exit-code. status asks nothing more of
// the API than without revisions: the prototype has no instancetype to
// expand.
func TestStatusPinned(t *testing.T) {
	kube, virt, web := opPinnedScene(t, "1111111111")
	out, errOut, calls, err := runStatus(t, kube, virt, "--exit-code")
	if code := opExitCode(err); code != 1 {
		t.Errorf("exit %d (%v), want 1 for the Pod that pins no revision", code, err)
	}
	_, now, err := prototype.Revise(t.Context(), fakeapi.NoExpand, web)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := "Warning: deployment.apps/web pins VM revision 1111111111 of prototype vms/web; the prototype has changed since (now " + now +
		"): `kubectl vmctl rollout restart web` rolls it out\n"
	if errOut != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, wantErr)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1:] {
		pinnedRow := strings.HasPrefix(line, "web-")
		if problem := strings.HasSuffix(line, "no VM revision pinned: kubectl vmctl rollout restart web"); problem == pinnedRow ||
			(pinnedRow && !strings.HasSuffix(line, "60m   ")) {
			t.Errorf("row %q: want no problem for a pinned Pod, only that it is not pinned for the other", line)
		}
	}
	for _, c := range calls {
		if !strings.HasPrefix(c, "list ") {
			t.Errorf("status made a request that is no LIST: %s", c)
		}
	}

	// Pinned to the prototype's revision now: nothing to say.
	kube, virt, _ = opPinnedScene(t, now)
	_, errOut, _, err = runStatus(t, kube, virt, "-l", "app.kubernetes.io/instance=web")
	if err != nil || errOut != "" {
		t.Errorf("status of Pods pinned to the revision now: %v, stderr %q", err, errOut)
	}
}
