package plugin

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// rolloutScene is a prototype testvm in vms, and a Deployment "web" of two
// agents scaffolded for it as it was before edit changed it (edit nil: as
// it is), with its revision store and the Pods' VMs of that revision, plus
// an unrelated Deployment. It returns the revision the prototype has now.
func rolloutScene(t *testing.T, edit func(*kubevirtv1.VirtualMachine)) (kube, virt []runtime.Object, now string) {
	t.Helper()
	proto := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", Generation: 1},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
	rev := revision.Snapshot(proto)
	hash, err := revision.Hash(rev)
	if err != nil {
		t.Fatal(err)
	}
	p := scaffold.NewParams(scaffold.KindDeployment, "testvm", "vms")
	p.Name, p.Snapshot, p.RevisionHash = "web", rev, hash
	objs, err := scaffold.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	var web *appsv1.Deployment
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			web = o
		case *unstructured.Unstructured: // the revision store
			kube = append(kube, o)
		}
	}
	other := web.DeepCopy()
	other.Name = "other"
	other.Spec.Template.Spec.Containers[0].Args = []string{"othervm"}
	other.Spec.Template.Labels = map[string]string{"app": "other"}
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: other.Spec.Template.Labels}
	kube = append([]runtime.Object{web, other}, kube...)
	for _, name := range []string{"web-a", "web-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", UID: types.UID("uid-" + name),
			Labels: web.Spec.Template.Labels, Annotations: web.Spec.Template.Annotations},
			Spec: corev1.PodSpec{NodeName: "node-1"}}
		vm, err := derive.VM(rev, derive.Pod{Name: pod.Name, Namespace: "vms", UID: pod.UID, Node: "node-1"}, derive.Options{VMRevisionHash: hash})
		if err != nil {
			t.Fatal(err)
		}
		vm.Status.Ready = true
		kube, virt = append(kube, pod), append(virt, vm)
	}
	now = hash
	if edit != nil {
		edit(proto)
		proto.Generation++
		if now, err = revision.Hash(revision.Snapshot(proto)); err != nil {
			t.Fatal(err)
		}
	}
	return kube, append(append([]runtime.Object{proto}, virt...), deployedKubeVirt("v1.9.0")), now
}

// moreMemory is a prototype edit.
func moreMemory(vm *kubevirtv1.VirtualMachine) {
	vm.Spec.Template.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: ptr.To(resource.MustParse("2Gi"))}
}

// runRolloutRestart runs `kubectl vmctl rollout restart args...` against
// fakes holding the objects, and returns what it printed and the requests.
func runRolloutRestart(t *testing.T, kubeObjs, virtObjs []runtime.Object, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	var stores, others []runtime.Object
	for _, o := range kubeObjs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			stores = append(stores, o)
		} else {
			others = append(others, o)
		}
	}
	kube := kubefake.NewClientset(others...)
	virt := kubevirtfake.NewSimpleClientset(virtObjs...)
	dyn := fakeapi.NewDynamic(stores...)
	var mu sync.Mutex
	for _, f := range []*k8stesting.Fake{&kube.Fake, &virt.Fake, &dyn.Fake} {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			call := a.GetVerb() + " " + a.GetResource().Resource
			if p, ok := a.(k8stesting.PatchAction); ok {
				call += " " + p.GetName() + " " + string(p.GetPatch())
				if opts := p.(k8stesting.PatchActionImpl).PatchOptions; len(opts.DryRun) > 0 {
					call += " dryRun"
				}
			}
			calls = append(calls, call)
			return false, nil, nil
		})
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewRolloutRestartOptions(streams)
	o.Now = func() time.Time { return time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC) }
	f := opFactory(t, kube, virt)
	f.Dynamic = dyn
	err = opRun(t.Context(), f, newCmdRolloutRestart(f, o), args...)
	return out.String(), errOut.String(), calls, err
}

func TestRolloutRestart(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(*kubevirtv1.VirtualMachine)
		args  []string
		out   string // with the revision the prototype has now for %[1]s
		write bool   // the store and the Deployment patched
	}{
		{name: "the prototype changed: pinned again", edit: moreMemory, args: []string{"testvm"}, write: true,
			out: "vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions configured\ndeployment.apps/web restarted\n"},
		{name: "-o name", edit: moreMemory, args: []string{"testvm", "-o", "name"}, write: true,
			out: "vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions\ndeployment.apps/web\n"},
		{name: "server dry run: the API server judges, nothing changes", edit: moreMemory, args: []string{"testvm", "--dry-run=server"}, write: true,
			out: "vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions configured (server dry run)\ndeployment.apps/web restarted (server dry run)\n"},
		{name: "client dry run: no write", edit: moreMemory, args: []string{"testvm", "--dry-run=client"},
			out: "vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions configured (dry run)\ndeployment.apps/web restarted (dry run)\n"},
		{name: "nothing changed: nothing happens", args: []string{"testvm"},
			out: "deployment.apps/web unchanged (pins VM revision %[1]s of prototype vms/testvm already)\n"},
		{name: "nothing changed, -o name prints nothing", args: []string{"testvm", "-o", "name"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube, virt, now := rolloutScene(t, tt.edit)
			out, errOut, calls, err := runRolloutRestart(t, kube, virt, tt.args...)
			if err != nil {
				t.Fatalf("rollout restart: %v (stderr %q)", err, errOut)
			}
			if want := strings.ReplaceAll(tt.out, "%[1]s", now); out != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
			var writes []string
			for _, c := range calls {
				if verb, _, _ := strings.Cut(c, " "); verb != "get" && verb != "list" {
					writes = append(writes, c)
				}
			}
			var want []string
			if tt.write {
				// The store holds the new revision before the template names it.
				want = []string{"patch vmrevisionstores web-vm-revisions", "patch deployments web"}
			}
			if diff := cmp.Diff(want, writes, cmp.Transformer("verb", func(c string) string {
				if i := strings.Index(c, " {"); i > 0 {
					return c[:i] // the patch itself is TestRestartPatchIsRestarted's
				}
				return strings.TrimSuffix(c, " dryRun")
			})); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRolloutRestartPinsAnUnpinnedTemplate: a template that pins no
// revision (edited by hand), whose agents make no VM, is pinned: the store
// gets its revision and the template names it. RBAC is scaffold's: no Role
// is touched.
func TestRolloutRestartPinsAnUnpinnedTemplate(t *testing.T) {
	kube, virt, now := rolloutScene(t, nil)
	web := kube[0].(*appsv1.Deployment)
	delete(web.Spec.Template.Annotations, contract.AnnotationVMRevision)
	web.Spec.Template.Spec.Containers[0].Args = []string{"testvm", "--state-dir=/run/vmctl"}
	kube = slices.DeleteFunc(kube, func(o runtime.Object) bool { _, ok := o.(*unstructured.Unstructured); return ok })
	out, errOut, calls, err := runRolloutRestart(t, kube, virt, "testvm")
	if err != nil || errOut != "" {
		t.Fatalf("rollout restart: %v (stderr %q)", err, errOut)
	}
	if want := "vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions configured\ndeployment.apps/web restarted\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	all := strings.Join(calls, "\n")
	for _, want := range []string{"create vmrevisionstores", `"--vm-revisions=web-vm-revisions"`, `"vmctl.kubevirt.io/vm-revision":"` + now + `"`} {
		if !strings.Contains(all, want) {
			t.Errorf("requests lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "roles") {
		t.Errorf("requests touch a Role:\n%s", all)
	}
}

func TestRolloutRestartOutputYAML(t *testing.T) {
	kube, virt, now := rolloutScene(t, moreMemory)
	// As the API server and kubectl apply left it.
	web := kube[0].(*appsv1.Deployment)
	web.ResourceVersion, web.UID, web.Generation = "4242", "uid-web", 3
	web.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"kind":"Deployment"}`
	web.Status.ReadyReplicas = 2
	out, _, _, err := runRolloutRestart(t, kube, virt, "testvm", "-o", "yaml", "--dry-run=client")
	if err != nil {
		t.Fatal(err)
	}
	// Everything the pin needs, for a GitOps repository: the store with
	// both revisions, and the Deployment pinning the new one.
	for _, want := range []string{"kind: VMRevisionStore\n", "name: web-vm-revisions\n", "    " + now + ":\n", "guest: 2Gi\n",
		"---\n", "kind: Deployment\n", "name: web\n",
		"kubectl.kubernetes.io/restartedAt: \"2026-11-23T13:00:00Z\"", "vmctl.kubevirt.io/vm-revision: " + now + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("-o yaml lacks %q:\n%s", want, out)
		}
	}
	// A manifest to apply: nothing the API server or kubectl wrote, whose
	// resourceVersion would make the apply a conflict.
	for _, server := range []string{"resourceVersion:", "uid: uid-web", "generation: 3", "last-applied-configuration", "readyReplicas"} {
		if strings.Contains(out, server) {
			t.Errorf("-o yaml holds %q:\n%s", server, out)
		}
	}
}

func TestRolloutRestartErrors(t *testing.T) {
	t.Run("no workload runs the prototype's agents, and no such prototype", func(t *testing.T) {
		kube, virt, _ := rolloutScene(t, moreMemory)
		_, _, _, err := runRolloutRestart(t, kube, virt, "tesvm")
		want := "no Deployment, StatefulSet or DaemonSet in vms namespace runs agents of prototype tesvm, and there is no VM tesvm in vms namespace: " +
			"check the name, or pass -n or -A; kubectl vmctl status lists the agents"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("a paused Deployment is not restarted", func(t *testing.T) {
		kube, virt, _ := rolloutScene(t, moreMemory)
		kube[0].(*appsv1.Deployment).Spec.Paused = true
		out, _, calls, err := runRolloutRestart(t, kube, virt, "testvm")
		if err == nil || !strings.Contains(err.Error(), "is paused: run kubectl rollout resume deployment/web -n vms first") {
			t.Errorf("error %v, want it to say the Deployment is paused", err)
		}
		if out != "" || strings.Contains(strings.Join(calls, "\n"), "patch ") || strings.Contains(strings.Join(calls, "\n"), "vmrevisionstores") {
			t.Errorf("printed %q and sent %q for a paused Deployment", out, calls)
		}
	})
	t.Run("the prototype carries vmctl's markers", func(t *testing.T) {
		// A copy of a derived VM: every agent would refuse its revision,
		// so no template may pin it, as scaffold refuses.
		marked := func(vm *kubevirtv1.VirtualMachine) {
			vm.Labels = map[string]string{contract.LabelPod: "web-a"}
		}
		kube, virt, _ := rolloutScene(t, marked)
		out, _, calls, err := runRolloutRestart(t, kube, virt, "testvm")
		if err == nil || !strings.Contains(err.Error(), "deployment.apps/web in vms namespace: rollout restart pins no revision its agents would refuse: ") ||
			!strings.Contains(err.Error(), contract.LabelPod) {
			t.Errorf("error %v, want the refusal naming the marker", err)
		}
		if all := strings.Join(calls, "\n"); out != "" || strings.Contains(all, "patch ") || strings.Contains(all, "create ") {
			t.Errorf("printed %q and sent %q for a marked prototype", out, calls)
		}
	})
	t.Run("the prototype is gone", func(t *testing.T) {
		kube, virt, _ := rolloutScene(t, moreMemory)
		_, _, _, err := runRolloutRestart(t, kube, virt[1:], "testvm")
		if err == nil || !strings.Contains(err.Error(), "prototype vms/testvm not found; nothing to roll out") {
			t.Errorf("error %v, want the prototype named as missing", err)
		}
	})
}

func TestRolloutStatusOnce(t *testing.T) {
	kube, virt, now := rolloutScene(t, nil)
	web := kube[0].(*appsv1.Deployment)
	web.Generation = 3
	web.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	web.Spec.Replicas = ptr.To[int32](2)
	virt[2].(*kubevirtv1.VirtualMachine).Status.Ready = false
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	f := opFactory(t, kubefake.NewClientset(kube...), kubevirtfake.NewSimpleClientset(virt...))
	if err := opRun(t.Context(), f, NewCmdRolloutStatus(f, streams), "testvm", "--watch=false"); err != nil {
		t.Fatal(err)
	}
	want := `Waiting for the VMs of deployment "web": 1 of 2 ready of VM revision ` + now + "...\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
}

func TestRolloutIsRegistered(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdVmctl(streams)
	root.SetArgs([]string{"rollout", "status", "--help"})
	if code := Execute(root, streams); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"kubectl vmctl rollout status PROTOTYPE", "--timeout", "-A, --all-namespaces", "-n, --namespace"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
