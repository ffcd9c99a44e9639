package plugin

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// rolloutScene is a prototype testvm at generation gen in vms and a
// scaffolded Deployment "web" of two agents whose VMs derive from
// generation vmGen, plus an unrelated Deployment.
func rolloutScene(t *testing.T, gen, vmGen int64) (kube, virt []runtime.Object) {
	t.Helper()
	p := scaffold.NewParams(scaffold.KindDeployment, "testvm", "vms")
	p.Name = "web"
	objs, err := scaffold.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	var web *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			web = d
		}
	}
	other := web.DeepCopy()
	other.Name = "other"
	other.Spec.Template.Spec.Containers[0].Args = []string{"othervm"}
	other.Spec.Template.Labels = map[string]string{"app": "other"}
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: other.Spec.Template.Labels}
	kube = []runtime.Object{web, other}
	proto := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", Generation: gen},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
	virt = []runtime.Object{proto}
	for _, name := range []string{"web-a", "web-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", UID: types.UID("uid-" + name), Labels: web.Spec.Template.Labels},
			Spec: corev1.PodSpec{NodeName: "node-1"}}
		at := proto.DeepCopy()
		at.Generation = vmGen
		vm, err := derive.VM(at, derive.Pod{Name: pod.Name, Namespace: "vms", UID: pod.UID, Node: "node-1"}, derive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm.Status.Ready = true
		kube, virt = append(kube, pod), append(virt, vm)
	}
	return kube, virt
}

// runRolloutRestart runs `kubectl vmctl rollout restart args...` against
// fakes holding the objects, and returns what it printed and the requests.
func runRolloutRestart(t *testing.T, kubeObjs, virtObjs []runtime.Object, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	kube := kubefake.NewClientset(kubeObjs...)
	virt := kubevirtfake.NewSimpleClientset(virtObjs...)
	var mu sync.Mutex
	for _, f := range []*k8stesting.Fake{&kube.Fake, &virt.Fake} {
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
	err = opRun(t.Context(), f, newCmdRolloutRestart(f, o), args...)
	return out.String(), errOut.String(), calls, err
}

const wantPatch = `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-23T13:00:00Z","vmctl.kubevirt.io/restarted-for-generation":"2"}}}}}`

func TestRolloutRestart(t *testing.T) {
	for _, tt := range []struct {
		name      string
		vmGen     int64
		args      []string
		wantOut   string
		wantPatch string // the patch request, if any
	}{
		{name: "VMs of an older generation: restarted", vmGen: 1, args: []string{"testvm"},
			wantOut: "deployment.apps/web restarted\n", wantPatch: "patch deployments web " + wantPatch},
		{name: "-o name", vmGen: 1, args: []string{"testvm", "-o", "name"},
			wantOut: "deployment.apps/web\n", wantPatch: "patch deployments web " + wantPatch},
		{name: "server dry run: the API server judges, nothing changes", vmGen: 1, args: []string{"testvm", "--dry-run=server"},
			wantOut: "deployment.apps/web restarted (server dry run)\n", wantPatch: "patch deployments web " + wantPatch + " dryRun"},
		{name: "client dry run: no request", vmGen: 1, args: []string{"testvm", "--dry-run=client"},
			wantOut: "deployment.apps/web restarted (dry run)\n"},
		{name: "nothing changed: nothing happens", vmGen: 2, args: []string{"testvm"},
			wantOut: "deployment.apps/web unchanged (all 2 VMs derive from prototype vms/testvm generation 2)\n"},
		{name: "nothing changed, -o name prints nothing", vmGen: 2, args: []string{"testvm", "-o", "name"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube, virt := rolloutScene(t, 2, tt.vmGen)
			out, errOut, calls, err := runRolloutRestart(t, kube, virt, tt.args...)
			if err != nil {
				t.Fatalf("rollout restart: %v (stderr %q)", err, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			var patches []string
			for _, c := range calls {
				if strings.HasPrefix(c, "patch ") {
					patches = append(patches, c)
				}
			}
			var want []string
			if tt.wantPatch != "" {
				want = []string{tt.wantPatch}
			}
			if diff := cmp.Diff(want, patches); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutRestartOutputYAML(t *testing.T) {
	kube, virt := rolloutScene(t, 2, 1)
	out, _, _, err := runRolloutRestart(t, kube, virt, "testvm", "-o", "yaml", "--dry-run=client")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: apps/v1\n", "kind: Deployment\n", "name: web\n",
		"kubectl.kubernetes.io/restartedAt: \"2026-11-23T13:00:00Z\"", "vmctl.kubevirt.io/restarted-for-generation: \"2\""} {
		if !strings.Contains(out, want) {
			t.Errorf("-o yaml lacks %q:\n%s", want, out)
		}
	}
}

func TestRolloutRestartErrors(t *testing.T) {
	t.Run("no workload runs the prototype's agents, and no such prototype", func(t *testing.T) {
		kube, virt := rolloutScene(t, 2, 1)
		_, _, _, err := runRolloutRestart(t, kube, virt, "tesvm")
		want := "no Deployment, StatefulSet or DaemonSet in vms namespace runs agents of prototype tesvm, and there is no VM tesvm in vms namespace: " +
			"check the name, or pass -n or -A; kubectl vmctl status lists the agents"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("a paused Deployment is not restarted", func(t *testing.T) {
		kube, virt := rolloutScene(t, 2, 1)
		kube[0].(*appsv1.Deployment).Spec.Paused = true
		out, _, calls, err := runRolloutRestart(t, kube, virt, "testvm")
		if err == nil || !strings.Contains(err.Error(), "is paused: run kubectl rollout resume deployment/web -n vms first") {
			t.Errorf("error %v, want it to say the Deployment is paused", err)
		}
		if out != "" || strings.Contains(strings.Join(calls, "\n"), "patch ") {
			t.Errorf("printed %q and sent %q for a paused Deployment", out, calls)
		}
	})
	t.Run("the prototype is gone", func(t *testing.T) {
		kube, virt := rolloutScene(t, 2, 1)
		_, _, _, err := runRolloutRestart(t, kube, virt[1:], "testvm")
		if err == nil || !strings.Contains(err.Error(), "prototype vms/testvm not found; nothing to roll out") {
			t.Errorf("error %v, want the prototype named as missing", err)
		}
	})
}

func TestRolloutStatusOnce(t *testing.T) {
	kube, virt := rolloutScene(t, 2, 1)
	web := kube[0].(*appsv1.Deployment)
	web.Generation = 3
	web.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	web.Spec.Replicas = ptr.To[int32](2)
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	f := opFactory(t, kubefake.NewClientset(kube...), kubevirtfake.NewSimpleClientset(virt...))
	if err := opRun(t.Context(), f, NewCmdRolloutStatus(f, streams), "testvm", "--watch=false"); err != nil {
		t.Fatal(err)
	}
	want := `Waiting for the VMs of deployment "web": 0 of 2 ready and derived from prototype vms/testvm generation 2 (2 from generation 1: run kubectl vmctl rollout restart testvm)...` + "\n"
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
