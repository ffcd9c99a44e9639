package plugin

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// The operator commands' tests (status, diff, gc) share the fixtures below;
// their names start with "op" to stay clear of other tests in the package.

// opNow is the fixed "now" of every operator command test.
var opNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var _ = opDefineUpdateFlag()

// opDefineUpdateFlag defines -update unless another golden test of the
// package already did.
func opDefineUpdateFlag() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite testdata golden files from the current output")
	}
	return true
}

// opGolden compares got with testdata/<name>, or rewrites it with -update.
func opGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plugin/ -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// opFactory is the fake factory of the operator command tests, over kube
// and virt, in a kubeconfig context whose namespace is vms.
func opFactory(t *testing.T, kube kubernetes.Interface, virt kubevirt.Interface) *fakeapi.Factory {
	return fakeapi.NewFactory(t, "vms", kube, virt)
}

// opRun runs cmd, made with f, as kubectl-vmctl runs it: under a root that
// carries f's flags, with args, until it returns or ctx ends.
func opRun(ctx context.Context, f *fakeapi.Factory, cmd *cobra.Command, args ...string) error {
	root := &cobra.Command{Use: "kubectl-vmctl", SilenceUsage: true, SilenceErrors: true}
	f.AddFlags(root.PersistentFlags())
	root.AddCommand(cmd)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	return root.ExecuteContext(ctx)
}

func opAgo(d time.Duration) metav1.Time { return metav1.NewTime(opNow.Add(-d)) }

// opPod is a running, ready agent Pod of prototype proto, started age ago.
func opPod(ns, name, node, proto string, age time.Duration, mods ...func(*corev1.Pod)) *corev1.Pod {
	started := opAgo(age)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: opAgo(age),
			Labels: map[string]string{"app.kubernetes.io/name": "vmctl", "app.kubernetes.io/component": "agent", "app.kubernetes.io/instance": proto},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "agent", Args: []string{proto}}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			StartTime:         &started,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", Ready: true}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// opWaitingPod is a Pending agent Pod that kube-scheduler found no room
// for.
func opWaitingPod(p *corev1.Pod) {
	p.Spec.NodeName, p.Status.StartTime = "", nil
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = nil
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}}
}

func opNotReadyPod(p *corev1.Pod) {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.ContainerStatuses[0].Ready = false
}

// opPrototype is a prototype VM with a containerDisk, at generation gen.
func opPrototype(ns, name string, gen int64) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-proto-" + name), Generation: gen,
			CreationTimestamp: opAgo(24 * time.Hour), Labels: map[string]string{"app": name}},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &halted,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{
					Disks: []kubevirtv1.Disk{{Name: "root", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: "virtio"}}}},
				}},
				Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
					ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"},
				}}},
			}},
		},
	}
}

// opDerived is the VM the agent of pod made from proto, as stored: ready,
// age old, with the cluster's defaults filled in.
func opDerived(t *testing.T, proto *kubevirtv1.VirtualMachine, pod *corev1.Pod, age time.Duration, mods ...func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(proto, derive.Pod{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Node: pod.Spec.NodeName}, derive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm.UID = types.UID("uid-vm-" + vm.Name)
	vm.CreationTimestamp = opAgo(age)
	vm.Annotations[kubevirtv1.ControllerAPILatestVersionObservedAnnotation] = "v1"
	vm.Status = kubevirtv1.VirtualMachineStatus{Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning}
	for _, m := range mods {
		m(vm)
	}
	return vm
}

func opNotReadyVM(since time.Duration) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) {
		vm.Status.Ready = false
		vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStarting
		vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
			Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, LastTransitionTime: opAgo(since),
		}}
	}
}

func opVMI(vm *kubevirtv1.VirtualMachine, node string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name, Labels: vm.Spec.Template.ObjectMeta.Labels,
			// As KubeVirt makes it: its VM is its controller.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID, Controller: ptr.To(true)}}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: node},
	}
}

// opScene is a cluster with healthy and broken agents in namespaces vms and
// team2:
//
//	vms/web-a      healthy, its VM at 10.244.1.7
//	vms/web-b      not ready for 10m, instance on another node, older generation
//	vms/web-c      running 2m without VM
//	vms/web-web-gone  VM whose Pod is gone
//	vms/hand-made  someone's VM without vmctl's labels
//	team2/db-0     healthy
//	team2/db-1     Pending: waits for room, which is no problem
func opScene(t *testing.T) (kube []runtime.Object, virt []runtime.Object) {
	t.Helper()
	web := opPrototype("vms", "web", 5)
	webOld := opPrototype("vms", "web", 3)
	db := opPrototype("team2", "db", 1)
	podA := opPod("vms", "web-a", "node-1", "web", time.Hour)
	podB := opPod("vms", "web-b", "node-2", "web", time.Hour, opNotReadyPod)
	podC := opPod("vms", "web-c", "node-1", "web", 2*time.Minute)
	gone := opPod("vms", "web-gone", "node-3", "web", 3*time.Hour)
	podDB := opPod("team2", "db-0", "node-2", "db", 30*time.Minute)
	waiting := opPod("team2", "db-1", "", "db", 20*time.Minute, opWaitingPod)
	unlabelled := opPod("vms", "someone-else", "node-1", "web", time.Hour)
	unlabelled.Labels = map[string]string{"app": "other"}

	vmA := opDerived(t, web, podA, time.Hour)
	vmB := opDerived(t, webOld, podB, time.Hour, opNotReadyVM(10*time.Minute))
	vmGone := opDerived(t, web, gone, 2*time.Hour)
	vmDB := opDerived(t, db, podDB, 30*time.Minute)
	handMade := opPrototype("vms", "hand-made", 1)

	kube = []runtime.Object{podA, podB, podC, podDB, waiting, unlabelled}
	vmiA := opVMI(vmA, "node-1")
	// The guest is up: virt-handler reports its interfaces; the first
	// reported address is the VM's IP.
	vmiA.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{
		{Name: "secondary"}, {Name: "default", IP: "10.244.1.7", IPs: []string{"10.244.1.7", "fd10:244::7"}}}
	virt = []runtime.Object{web, db, vmA, vmB, vmGone, vmDB, handMade,
		vmiA, opVMI(vmB, "node-3"), opVMI(vmGone, "node-3"), opVMI(vmDB, "node-2")}
	return kube, virt
}

// opFakes returns fake clientsets holding objs, with one log of what both
// were asked, in order.
func opFakes(kubeObjs, virtObjs []runtime.Object) (*kubefake.Clientset, *kubevirtfake.Clientset, *[]string) {
	kube, virt, _, log := opFakesWithStores(kubeObjs, virtObjs)
	return kube, virt, log
}

// opFakesWithStores is opFakes with the fake dynamic client too, which
// serves the revision stores among kubeObjs (VMRevisionStores, as
// unstructured objects): give it to the factory as its Dynamic.
func opFakesWithStores(kubeObjs, virtObjs []runtime.Object) (*kubefake.Clientset, *kubevirtfake.Clientset, *dynamicfake.FakeDynamicClient, *[]string) {
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
	fakeapi.SelectNames(&kube.Fake, kube.Tracker())
	fakeapi.SelectNames(&virt.Fake, virt.Tracker())
	log := &[]string{}
	var mu sync.Mutex // informers call both fakes at once
	for _, f := range []*k8stesting.Fake{&kube.Fake, &virt.Fake, &dyn.Fake} {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			*log = append(*log, opDescribe(a))
			return false, nil, nil
		})
	}
	return kube, virt, dyn, log
}

// opDescribe renders an action as "verb resource namespace [selector|name]".
func opDescribe(a k8stesting.Action) string {
	s := a.GetVerb() + " " + a.GetResource().Resource + " " + a.GetNamespace()
	switch a := a.(type) {
	case k8stesting.ListAction:
		if sel := a.GetListRestrictions().Labels.String(); sel != "" {
			s += " " + sel
		}
		if sel := a.GetListRestrictions().Fields.String(); sel != "" {
			s += " " + sel
		}
	case k8stesting.DeleteAction:
		s += " " + a.GetName()
		opts := a.GetDeleteOptions()
		if opts.Preconditions != nil && opts.Preconditions.UID != nil {
			s += " uid=" + string(*opts.Preconditions.UID)
		}
		if len(opts.DryRun) > 0 {
			s += " dryRun=" + strings.Join(opts.DryRun, ",")
		}
	case k8stesting.GetAction:
		s += " " + a.GetName()
	}
	return s
}

// opExitCode is the exit status plugin.Execute would give err.
func opExitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *cmdutil.ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	return 1
}

// runStatus runs `kubectl vmctl status args...` against fakes holding the
// objects, with no color unless args ask for it.
func runStatus(t *testing.T, kubeObjs, virtObjs []runtime.Object, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	kube, virt, log := opFakes(kubeObjs, virtObjs)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewStatusOptions(streams)
	o.Now = func() time.Time { return opNow }
	o.Getenv = func(string) string { return "" }
	f := opFactory(t, kube, virt)
	err = opRun(t.Context(), f, newCmdStatus(f, o), args...)
	return out.String(), errOut.String(), *log, err
}

func TestStatusGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "status/plain.txt", args: nil},
		{golden: "status/wide.txt", args: []string{"-o", "wide"}},
		{golden: "status/all-namespaces.txt", args: []string{"-A"}},
		{golden: "status/all-namespaces-wide.txt", args: []string{"-A", "-o", "wide"}},
		{golden: "status/prototype.txt", args: []string{"db", "-n", "team2"}},
		{golden: "status/json.json", args: []string{"-o", "json"}},
		{golden: "status/yaml.yaml", args: []string{"-n", "team2", "-o", "yaml"}},
		{golden: "status/name.txt", args: []string{"-o", "name"}},
		{golden: "status/jsonpath.txt", args: []string{"-o", "jsonpath={range .items[*]}{.pod}{\"\\t\"}{.problems}{\"\\n\"}{end}"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			kube, virt := opScene(t)
			out, errOut, _, err := runStatus(t, kube, virt, tt.args...)
			if err != nil {
				t.Fatalf("status %v: %v\n%s", tt.args, err, errOut)
			}
			if strings.Contains(out, "\x1b") {
				t.Errorf("output to a non-terminal holds ANSI escapes:\n%q", out)
			}
			opGolden(t, tt.golden, out)
		})
	}
}

func TestStatusReadsOneListPerKind(t *testing.T) {
	kube, virt := opScene(t)
	_, _, calls, err := runStatus(t, kube, virt, "-l", "app.kubernetes.io/instance=web")
	if err != nil {
		t.Fatal(err)
	}
	// Derived VMs by label, never all VMs (the scene holds hand-made, which
	// no one reads); prototypes by name; the agents' Warning Events, where
	// a Pod lacks its VM. The first three run at once.
	slices.Sort(calls[:3])
	want := []string{
		"list pods vms app.kubernetes.io/component=agent,app.kubernetes.io/instance=web,app.kubernetes.io/name=vmctl",
		"list virtualmachineinstances vms vmctl.kubevirt.io/prototype",
		"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
		"list virtualmachines vms metadata.name=web",
		// A Pod lacks its VM: last, its agent's Warnings say why.
		"list events vms involvedObject.kind=Pod,source=vmctl-agent,type=Warning",
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
}

func TestStatusExitCode(t *testing.T) {
	kube, virt := opScene(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "problems", args: []string{"--exit-code"}, wantCode: 1},
		// team2's db-1 waits for room, which is no problem.
		{name: "no problems, one waits", args: []string{"--exit-code", "-n", "team2"}, wantCode: 0},
		{name: "problems without --exit-code", args: nil, wantCode: 0},
		{name: "bad output under --exit-code", args: []string{"--exit-code", "-o", "xml"}, wantCode: 2},
		{name: "bad color", args: []string{"--color", "sometimes"}, wantCode: 1},
		{name: "watch with exit code", args: []string{"--watch", "--exit-code"}, wantCode: 2},
		{name: "watch with json", args: []string{"--watch", "-o", "json"}, wantCode: 1},
		{name: "prototype twice", args: []string{"web", "--prototype", "db"}, wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := runStatus(t, kube, virt, tt.args...)
			if got := opExitCode(err); got != tt.wantCode {
				t.Errorf("exit code = %d (%v), want %d", got, err, tt.wantCode)
			}
		})
	}
}

func TestStatusEmpty(t *testing.T) {
	out, errOut, _, err := runStatus(t, nil, nil, "-n", "empty")
	if err != nil {
		t.Fatal(err)
	}
	if out != "" || errOut != "No vmctl agents or derived VMs found in empty namespace.\n" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

func TestStatusPrototypeNotFound(t *testing.T) {
	kube, virt := opScene(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "no such prototype", args: []string{"wbe"},
			want: "No vmctl agents or derived VMs of prototype wbe found in vms namespace, and no VM wbe in vms namespace: check the prototype's name, or pass -n or -A.\n"},
		{name: "no such prototype anywhere", args: []string{"wbe", "-A"},
			want: "No vmctl agents or derived VMs of prototype wbe found, and no VM wbe in any namespace: check the prototype's name.\n"},
		{name: "a prototype in another namespace", args: []string{"db"},
			want: "No vmctl agents or derived VMs of prototype db found in vms namespace, and no VM db in vms namespace: check the prototype's name, or pass -n or -A.\n"},
		{name: "a prototype without agents", args: []string{"hand-made"},
			want: "No vmctl agents or derived VMs of prototype hand-made found in vms namespace.\n"},
		{name: "a derived VM is no prototype", args: []string{"web-web-a"},
			want: "No vmctl agents or derived VMs of prototype web-web-a found in vms namespace, and no VM web-web-a in vms namespace: check the prototype's name, or pass -n or -A.\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, _, err := runStatus(t, kube, virt, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if out != "" || errOut != tt.want {
				t.Errorf("stdout %q, stderr %q, want stderr %q", out, errOut, tt.want)
			}
		})
	}
}

func TestStatusColor(t *testing.T) {
	kube, virt := opScene(t)
	// A Pod name with an escape sequence must reach the terminal escaped.
	evil := opPod("vms", "evil", "node-1", "web", time.Hour)
	evil.Spec.NodeName = "node\x1b]0;pwned\x07"
	kube = append(kube, evil)

	out, _, _, err := runStatus(t, kube, virt, "--color=always")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\x1b[") {
		t.Errorf("--color=always output has no color:\n%q", out)
	}
	if strings.Contains(out, "\x1b]") || !strings.Contains(out, "node^[]0;pwned") {
		t.Errorf("cluster string not escaped:\n%q", out)
	}

	t.Setenv("NO_COLOR", "1") // --color=auto never colors a pipe anyway; NO_COLOR must not break it
	out, _, _, err = runStatus(t, kube, virt, "--color=never")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("--color=never output has color:\n%q", out)
	}
}

func TestStatusIsRegistered(t *testing.T) {
	root := NewCmdVmctl(genericiooptions.NewTestIOStreamsDiscard())
	for _, name := range []string{"status", "diff", "gc"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Errorf("kubectl vmctl %s is not registered: %v", name, err)
			continue
		}
		if !strings.HasPrefix(cmd.CommandPath(), "kubectl vmctl ") {
			t.Errorf("help reads %q, want kubectl vmctl %s", cmd.CommandPath(), name)
		}
	}
}

// opSyncBuffer is a bytes.Buffer safe for a command writing from another
// goroutine.
type opSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *opSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *opSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// opNoWatchList is KubeVirt's fake clientset, saying what its tracker cannot
// do: stream the initial list as watch events (the real API server can).
type opNoWatchList struct{ *kubevirtfake.Clientset }

func (opNoWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestStatusWatchPrintsABlockPerChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kubeObjs, virtObjs := opScene(t)
	kube, virt, _ := opFakes(kubeObjs, virtObjs)
	out := &opSyncBuffer{}
	o := NewStatusOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	o.Now = func() time.Time { return opNow }
	o.Refresh = time.Hour
	f := opFactory(t, kube, opNoWatchList{virt})
	cmd := newCmdStatus(f, o)
	done := make(chan error, 1)
	go func() { done <- opRun(ctx, f, cmd, "--watch") }()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return ok(), nil })
		if err != nil {
			t.Fatalf("%s: %v; output so far:\n%s", what, err, out.String())
		}
	}
	watching := func(acts []k8stesting.Action, resource string) bool {
		for _, a := range acts {
			if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
				return true
			}
		}
		return false
	}
	waitFor("first table", func() bool { return strings.Contains(out.String(), "web-web-gone") })
	waitFor("watches open", func() bool {
		return watching(kube.Actions(), "pods") && watching(virt.Actions(), "virtualmachines") && watching(virt.Actions(), "virtualmachineinstances")
	})
	if err := virt.KubevirtV1().VirtualMachines("vms").Delete(ctx, "web-web-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its instance goes with it, as the garbage collector makes it; left,
	// it is an orphan (status shows it) until then.
	if err := virt.KubevirtV1().VirtualMachineInstances("vms").Delete(ctx, "web-web-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("second table", func() bool { return strings.Count(out.String(), "POD ") == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("status --watch returned %v after cancel", err)
	}

	blocks := strings.Split(out.String(), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("want two table blocks separated by a blank line, got %d:\n%s", len(blocks), out.String())
	}
	if strings.Contains(blocks[1], "web-web-gone") || !strings.Contains(blocks[1], "web-web-a") {
		t.Errorf("second block does not reflect the deletion:\n%s", blocks[1])
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("watch output to a pipe holds escapes:\n%q", out.String())
	}
}

func TestStatusWatchRedrawsATerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kubeObjs, virtObjs := opScene(t)
	kube, virt, _ := opFakes(kubeObjs, virtObjs)
	out := &opSyncBuffer{}
	o := NewStatusOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	now := opNow
	var mu sync.Mutex
	o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Minute); return now }
	o.Refresh = 10 * time.Millisecond // every tick is a minute later: ages change, so it redraws
	o.IsTerminal = func(io.Writer) bool { return true }
	o.Getenv = func(k string) string { return map[string]string{"TERM": "xterm"}[k] }
	f := opFactory(t, kube, opNoWatchList{virt})
	done := make(chan error, 1)
	go func() { done <- opRun(ctx, f, newCmdStatus(f, o), "--watch") }()

	const clearScreen = "\x1b[H\x1b[2J"
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return strings.Count(out.String(), clearScreen) >= 2, nil
	})
	if err != nil {
		t.Fatalf("no redraw: %v; output:\n%q", err, out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("status --watch returned %v after cancel", err)
	}
	got := out.String()
	if !strings.HasPrefix(got, clearScreen) {
		t.Errorf("first frame does not clear the screen:\n%q", got[:min(len(got), 80)])
	}
	if !strings.Contains(got, "\x1b[3") {
		t.Errorf("terminal frames are not colored:\n%q", got[:min(len(got), 400)])
	}
}

func TestStatusUnknownContext(t *testing.T) {
	kube, virt := opScene(t)
	_, _, _, err := runStatus(t, kube, virt, "--context", "nope")
	if err == nil || !strings.Contains(err.Error(), `context was not found for specified context: nope`) || !strings.Contains(err.Error(), "check --kubeconfig and --context") {
		t.Errorf("status --context nope: %v, want the missing context named and --context suggested", err)
	}
}

// TestStatusFindsAVMsPodWithoutAgentLabels: an agent run by hand for a Pod
// without scaffold's labels (the `kubectl run` example of docs/tour.md). Its VM is
// paired with that Pod, not called orphaned.
func TestStatusFindsAVMsPodWithoutAgentLabels(t *testing.T) {
	web := opPrototype("vms", "web", 1)
	manual := opPod("vms", "manual", "node-1", "", time.Hour)
	manual.Labels = map[string]string{"run": "manual"}
	manual.Spec.Containers[0].Args = nil
	vm := opDerived(t, web, manual, time.Hour)
	out, errOut, _, err := runStatus(t, []runtime.Object{manual}, []runtime.Object{web, vm, opVMI(vm, "node-1")}, "--exit-code")
	if code := opExitCode(err); code != 0 {
		t.Errorf("status --exit-code: exit %d (%v), want 0\n%s%s", code, err, out, errOut)
	}
	want := "POD      NODE     READY   VM           VM STATUS   VMI NODE   AGE   PROBLEM\n" +
		"manual   node-1   1/1     web-manual   Running     node-1     60m   \n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// TestStatusWatchStopsWithStatusError: the VMs of vms record agents in
// namespace secret, where the user may not list Pods. status fails with
// "pods is forbidden"; status --watch must fail the same way, at once, not
// wait for a list that never comes.
func TestStatusWatchStopsWithStatusError(t *testing.T) {
	web := opPrototype("vms", "web", 1)
	vm := opDerived(t, web, opPod("secret", "web-0", "node-1", "web", time.Hour), time.Hour)
	vm.Namespace, vm.OwnerReferences = "vms", nil // an ownerReference cannot cross namespaces
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		kube, virt, _ := opFakes(nil, []runtime.Object{web, vm})
		kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "secret" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
				errors.New(`User "dev" cannot list resource "pods" in API group "" in the namespace "secret"`))
		})
		f := opFactory(t, kube, opNoWatchList{virt})
		err := opRun(ctx, f, NewCmdStatus(f, genericiooptions.NewTestIOStreamsDiscard()), args...)
		if ctx.Err() != nil {
			t.Errorf("status %v still ran after 20s", args)
		}
		return err
	}
	want := run()
	if want == nil || !apierrors.IsForbidden(want) {
		t.Fatalf("status: %v, want pods forbidden", want)
	}
	if got := run("--watch"); got == nil || got.Error() != want.Error() {
		t.Errorf("status --watch: %v\nwant status's error: %v", got, want)
	}
}

// TestStatusWatchRedrawsAFewTimesASecond creates VMs one after another for
// a second and a half: every one changes the table, but a pipe gets at
// most four tables a second.
func TestStatusWatchRedrawsAFewTimesASecond(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	web := opPrototype("vms", "web", 1)
	kube, virt, _ := opFakes(nil, []runtime.Object{web})
	out := &opSyncBuffer{}
	o := NewStatusOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	o.Now = func() time.Time { return opNow }
	o.Refresh = time.Hour
	f := opFactory(t, kube, opNoWatchList{virt})
	done := make(chan error, 1)
	go func() { done <- opRun(ctx, f, newCmdStatus(f, o), "--watch") }()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "No vmctl agents") &&
			slices.ContainsFunc(virt.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "watch" }), nil
	})
	if err != nil {
		t.Fatalf("no first table: %v", err)
	}
	const churn = 1500 * time.Millisecond
	t0 := time.Now()
	for i := 0; time.Since(t0) < churn; i++ {
		vm := opDerived(t, web, opPod("vms", fmt.Sprintf("p-%04d", i), "node-1", "web", time.Hour), time.Hour)
		if _, err := virt.KubevirtV1().VirtualMachines("vms").Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the last redraw
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tables := strings.Count(out.String(), "POD ")
	if most := int(4*churn.Seconds()) + 2; tables > most || tables < 2 {
		t.Errorf("%d tables while VMs were created for %v, want 2 to %d", tables, churn, most)
	}
}
