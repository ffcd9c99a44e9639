package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// runDiff runs `kubectl vmctl diff args...` against fakes holding the
// objects: kubeObjs core, apps and revision stores, virtObjs KubeVirt's.
func runDiff(t *testing.T, kubeObjs, virtObjs []runtime.Object, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	return runDiffWith(t, func(string) string { return "" }, kubeObjs, virtObjs, args...)
}

// runDiffWith is runDiff with the environment getenv reads.
func runDiffWith(t *testing.T, getenv func(string) string, kubeObjs, virtObjs []runtime.Object, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	kube, virt, dyn, log := opFakesWithStores(kubeObjs, virtObjs)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewDiffOptions(streams)
	o.Getenv = getenv
	f := opFactory(t, kube, virt)
	f.Dynamic = dyn
	err = opRun(t.Context(), f, newCmdDiff(f, o), args...)
	return out.String(), errOut.String(), *log, err
}

// runDiffScene runs `kubectl vmctl diff args...` against diffScene.
func runDiffScene(t *testing.T, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	kubeObjs, virtObjs := diffScene(t)
	return runDiff(t, kubeObjs, virtObjs, args...)
}

// diffScene has, in vms, prototype web (generation 5) and its VMs, of the
// revision of it that workload web's store holds: web-web-a as derived,
// web-web-b edited by hand (2 cores, not 4, and another image); in team2,
// db-db-0, of db's revision, as derived.
func diffScene(t *testing.T) (kubeObjs, virtObjs []runtime.Object) {
	t.Helper()
	web := opPrototype("vms", "web", 5)
	web.Spec.Template.Spec.Domain.CPU = &kubevirtv1.CPU{Cores: 4}
	db := opPrototype("team2", "db", 1)
	webRev, webHash, webStore := diffRevision(t, web, "vms", "web")
	dbRev, dbHash, dbStore := diffRevision(t, db, "team2", "db")
	vmA := opDerived(t, webRev, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, pinnedTo(webHash))
	vmB := opDerived(t, webRev, opPod("vms", "web-b", "node-2", "web", time.Hour), time.Hour, pinnedTo(webHash), func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.CPU.Cores = 2
		vm.Spec.Template.Spec.Volumes[0].ContainerDisk.Image = "quay.io/containerdisks/fedora:40"
	})
	vmDB := opDerived(t, dbRev, opPod("team2", "db-0", "node-2", "db", time.Hour), time.Hour, pinnedTo(dbHash))
	return []runtime.Object{webStore, dbStore}, []runtime.Object{web, db, vmA, vmB, vmDB, opPrototype("vms", "hand-made", 1)}
}

// diffRevision is the VM revision of proto that scaffold would pin, its
// hash, and the revision store of workload in namespace that holds it.
func diffRevision(t *testing.T, proto *kubevirtv1.VirtualMachine, namespace, workload string) (*kubevirtv1.VirtualMachine, string, runtime.Object) {
	t.Helper()
	rev, hash, err := prototype.Revise(t.Context(), fakeapi.NoExpand, proto)
	if err != nil {
		t.Fatal(err)
	}
	s := revision.NewStore(namespace, workload)
	s.Revisions[hash] = rev
	store, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	return rev, hash, store
}

// pinnedTo makes a VM record VM revision hash, as its agent's does.
func pinnedTo(hash string) func(*kubevirtv1.VirtualMachine) {
	return func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationVMRevision] = hash }
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		golden     string
		wantStderr string
		wantCode   int
		wantCalls  []string
	}{{
		name:       "drift in the current namespace",
		golden:     "diff/drift.txt",
		wantStderr: "1 of 2 derived VMs drifted in vms namespace\n",
		wantCode:   1,
		wantCalls: []string{"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype", "list vmrevisionstores vms app.kubernetes.io/component=vm-revisions",
			"list deployments vms", "list statefulsets vms", "list daemonsets vms"},
	}, {
		name:       "no drift",
		args:       []string{"-n", "team2"},
		golden:     "diff/none.txt",
		wantStderr: "0 of 1 derived VMs drifted in team2 namespace\n",
		wantCode:   0,
		wantCalls: []string{"list virtualmachines team2 vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype", "list vmrevisionstores team2 app.kubernetes.io/component=vm-revisions",
			"list deployments team2", "list statefulsets team2", "list daemonsets team2"},
	}, {
		name:       "all namespaces, one prototype",
		args:       []string{"db", "-A"},
		golden:     "diff/none.txt",
		wantStderr: "0 of 1 derived VMs drifted\n",
		wantCode:   0,
		wantCalls: []string{"list virtualmachines  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype=db", "list vmrevisionstores  app.kubernetes.io/component=vm-revisions",
			"list deployments ", "list statefulsets ", "list daemonsets "},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, calls, err := runDiffScene(t, tt.args...)
			if got := opExitCode(err); got != tt.wantCode {
				t.Errorf("exit code = %d (%v), want %d", got, err, tt.wantCode)
			}
			if errOut != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", errOut, tt.wantStderr)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
			opGolden(t, tt.golden, out)
		})
	}
}

// TestDiffPrototypeElsewhere: a VM whose prototype lives in another
// namespace is compared with the revision that its Pod's namespace's
// store holds; nothing of the prototype's namespace is read.
func TestDiffPrototypeElsewhere(t *testing.T) {
	proto := opPrototype("protos", "web", 1)
	rev, hash, store := diffRevision(t, proto, "vms", "web")
	vm := opDerived(t, rev, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, pinnedTo(hash))
	_, errOut, calls, err := runDiff(t, []runtime.Object{store}, []runtime.Object{proto, vm})
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, errOut)
	}
	want := []string{"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype", "list vmrevisionstores vms app.kubernetes.io/component=vm-revisions",
		"list deployments vms", "list statefulsets vms", "list daemonsets vms"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
}

// diffPinnedScene is what scaffold makes of prototype vms/web pinned at
// generation 1 (one core), as three workloads: its objects, and the
// revision's hash. Deployment web pins the revision, its store holds it;
// legacy's template was edited by hand to pin none, by-hand lacks
// scaffold's label.
func diffPinnedScene(t *testing.T) (kubeObjs []runtime.Object, hash string, web *kubevirtv1.VirtualMachine) {
	t.Helper()
	web = opPrototype("vms", "web", 1)
	web.Spec.Template.Spec.Domain.CPU = &kubevirtv1.CPU{Cores: 1}
	rev, hash, err := prototype.Revise(t.Context(), fakeapi.NoExpand, web)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "legacy", "by-hand"} {
		objs, err := scaffold.Build(scaffold.Params{Kind: scaffold.KindDeployment, Prototype: "web", Name: name, Namespace: "vms", Replicas: 1,
			Image: "vmctl", GracePeriodSeconds: scaffold.DefaultGracePeriodSeconds, Snapshot: rev, RevisionHash: hash})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *appsv1.Deployment:
				switch name {
				case "legacy":
					delete(o.Spec.Template.Annotations, contract.AnnotationVMRevision)
				case "by-hand":
					delete(o.Spec.Template.Labels, contract.LabelAgentPrototype)
				}
				kubeObjs = append(kubeObjs, o)
			case *unstructured.Unstructured: // the revision store
				if name != "legacy" {
					kubeObjs = append(kubeObjs, o)
				}
			}
		}
	}
	return kubeObjs, hash, web
}

// TestDiffPinned: a VM whose Pod pins a revision is compared with that
// revision, not with the prototype, which changed since (two cores); the
// workload that pins it is said to have changes not rolled out, once,
// which is a difference (exit 1), with the diff from the pinned revision
// to the one rollout restart would pin; one that pins nothing, or that
// scaffold did not write, is not compared.
func TestDiffPinned(t *testing.T) {
	kubeObjs, hash, web := diffPinnedScene(t)
	rev := web.DeepCopy()
	vm := opDerived(t, rev, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, func(vm *kubevirtv1.VirtualMachine) {
		vm.Annotations[contract.AnnotationVMRevision] = hash
	})
	web.Generation = 2
	web.Spec.Template.Spec.Domain.CPU.Cores = 2
	_, now, err := prototype.Revise(t.Context(), fakeapi.NoExpand, web)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, calls, err := runDiff(t, kubeObjs, []runtime.Object{web, vm})
	if got := opExitCode(err); got != 1 {
		t.Errorf("exit code = %d (%v), want 1", got, err)
	}
	if want := "0 of 1 derived VMs drifted; 1 of 1 workloads have prototype changes not rolled out in vms namespace\n"; errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	// Then what rollout restart would change, as kubectl diff shows it.
	want := "deployment.apps/web pins VM revision " + hash + " of prototype vms/web; the prototype has changed since (now " + now +
		"): `kubectl vmctl rollout restart web` rolls it out\n" +
		"--- prototype vms/web (VM revision " + hash + ", pinned)\n" +
		"+++ prototype vms/web (VM revision " + now + ", rollout restart pins)\n" +
		"@@ -8,7 +8,7 @@\n" +
		"     spec:\n" +
		"       domain:\n" +
		"         cpu:\n" +
		"-          cores: 1\n" +
		"+          cores: 2\n" +
		"         devices:\n" +
		"           disks:\n" +
		"           - disk:\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	wantCalls := []string{
		"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
		"list vmrevisionstores vms app.kubernetes.io/component=vm-revisions",
		"list deployments vms", "list statefulsets vms", "list daemonsets vms",
		"list virtualmachines vms metadata.name=web",
	}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}

	// Rolled out: nothing to say, and the VM of the new revision is as derived.
	kubeObjs, hash, web = diffPinnedScene(t)
	vm = opDerived(t, web, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, func(vm *kubevirtv1.VirtualMachine) {
		vm.Annotations[contract.AnnotationVMRevision] = hash
	})
	out, errOut, _, err = runDiff(t, kubeObjs, []runtime.Object{web, vm}, "-A")
	if err != nil || out != "" || errOut != "0 of 1 derived VMs drifted; 0 of 1 workloads have prototype changes not rolled out\n" {
		t.Errorf("diff of a workload pinned to the revision now: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
}

// TestDiffPinnedAllNamespaces: with -A, the command names the workload's
// namespace, and the line its namespace where the prototype is elsewhere.
// TestDiffRewrittenRevision: a workload whose store holds the revision it
// pins rewritten (pruned, then added again with other content) is named,
// with what puts it right, and the diff exits 1, though the prototype is
// unchanged. Its VM, made before, is compared with the revision as another
// store of the namespace holds it, as its hash says, and has not drifted.
func TestDiffRewrittenRevision(t *testing.T) {
	kubeObjs, hash, web := diffPinnedScene(t)
	for _, obj := range kubeObjs {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == "web-vm-revisions" {
			if err := unstructured.SetNestedField(u.Object, int64(8), "spec", "revisions", hash, "spec", "template", "spec", "domain", "cpu", "cores"); err != nil {
				t.Fatal(err)
			}
		}
	}
	vm := opDerived(t, web.DeepCopy(), opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, func(vm *kubevirtv1.VirtualMachine) {
		vm.Annotations[contract.AnnotationVMRevision] = hash
	})
	out, errOut, _, err := runDiff(t, kubeObjs, []runtime.Object{web, vm})
	if got := opExitCode(err); got != 1 {
		t.Errorf("exit code = %d (%v), want 1", got, err)
	}
	want := "deployment.apps/web pins VM revision " + hash + ", which VMRevisionStore vms/web-vm-revisions holds rewritten: its content hashes to "
	if !strings.Contains(out, want) || !strings.Contains(out, "`kubectl vmctl rollout restart web` writes it anew") {
		t.Errorf("stdout:\n%s\nwant a line that starts %q", out, want)
	}
	if wantErr := "0 of 1 derived VMs drifted; 0 of 1 workloads have prototype changes not rolled out; 1 pin a rewritten VM revision in vms namespace\n"; errOut != wantErr {
		t.Errorf("stderr = %q, want %q", errOut, wantErr)
	}
}

func TestDiffPinnedAllNamespaces(t *testing.T) {
	kubeObjs, _, web := diffPinnedScene(t)
	for _, obj := range kubeObjs {
		if d, ok := obj.(*appsv1.Deployment); ok && d.Name == "web" {
			d.Namespace = "apps"
			d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args, "--proto-namespace=vms")
		}
	}
	web.Spec.Template.Spec.Domain.CPU.Cores = 2
	out, _, _, err := runDiff(t, kubeObjs, []runtime.Object{web}, "-A")
	if got := opExitCode(err); got != 1 || !strings.HasPrefix(out, "deployment.apps/web in apps namespace pins VM revision ") ||
		!strings.HasSuffix(out, "`kubectl vmctl rollout restart web -n apps` rolls it out\n") {
		t.Errorf("exit %d (%v), stdout:\n%s", got, err, out)
	}
}

func TestDiffErrorsExitTwo(t *testing.T) {
	web := opPrototype("vms", "web", 1)
	rev, _, store := diffRevision(t, web, "vms", "web")
	pruned := opDerived(t, rev, opPod("vms", "web-b", "node-1", "web", time.Hour), time.Hour, pinnedTo("0000000000"))
	tests := []struct {
		name       string
		objs       []runtime.Object
		args       []string
		wantStderr string
	}{
		{name: "revision pruned", objs: []runtime.Object{web, pruned},
			wantStderr: "error: vms/web-web-b: VM revision 0000000000 of prototype vms/web is in no revision store of the Pod's namespace (pruned?); " +
				"`kubectl vmctl rollout restart web` pins a new one\n0 of 1 derived VMs drifted, 1 could not be compared in vms namespace\n"},
		{name: "unknown flag", args: []string{"--bogus"}},
		{name: "two arguments", args: []string{"a", "b"}},
		{name: "bad color", args: []string{"--color=rainbow"}},
		{name: "prototype twice", args: []string{"web", "--prototype=db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, _, err := runDiff(t, []runtime.Object{store}, tt.objs, tt.args...)
			if got := opExitCode(err); got != 2 {
				t.Errorf("exit code = %d (%v), want 2", got, err)
			}
			if tt.wantStderr != "" && errOut != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", errOut, tt.wantStderr)
			}
		})
	}
}

func TestDiffPrototypeNotFound(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "in the namespace", args: []string{"wbe"},
			want: "no VMs derived from prototype wbe in vms namespace, and no VM wbe in vms namespace: check the prototype's name, or pass -n or -A"},
		{name: "anywhere", args: []string{"wbe", "-A"},
			want: "no VMs derived from prototype wbe, and no VM wbe in any namespace: check the prototype's name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, _, err := runDiffScene(t, tt.args...)
			if got := opExitCode(err); got != 2 || err.Error() != tt.want {
				t.Errorf("exit code %d, error %v; want 2, %q", got, err, tt.want)
			}
			if out != "" || errOut != "" {
				t.Errorf("stdout %q, stderr %q; want the error alone", out, errOut)
			}
		})
	}
	// A prototype that exists without derived VMs is no error: nothing drifted.
	_, errOut, _, err := runDiffScene(t, "hand-made")
	if err != nil || errOut != "0 of 0 derived VMs drifted in vms namespace\n" {
		t.Errorf("diff hand-made: %v, stderr %q", err, errOut)
	}
}

func TestDiffColor(t *testing.T) {
	out, _, _, _ := runDiffScene(t, "--color=always")
	if !strings.Contains(out, "\x1b[") || !strings.Contains(out, "cores: 4") {
		t.Errorf("--color=always diff has no color:\n%q", out)
	}
	out, _, _, _ = runDiffScene(t, "--color=never")
	if strings.Contains(out, "\x1b") {
		t.Errorf("--color=never diff has escapes:\n%q", out)
	}
}

// TestDiffPrintsEachPageAsItComes serves the derived VMs one a page, as an
// API server may, and fails the second page: the first VM's diff must be
// out already (diff streams), and the command exits 2 with the error.
func TestDiffPrintsEachPageAsItComes(t *testing.T) {
	kube, virt, dyn, _ := opFakesWithStores(diffScene(t))
	virt.PrependReactor("list", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListActionImpl).ListOptions.Continue != "" {
			return true, nil, apierrors.NewInternalError(errors.New("etcd went away"))
		}
		vmB, err := virt.Tracker().Get(a.GetResource(), "vms", "web-web-b")
		if err != nil {
			return true, nil, err
		}
		return true, &kubevirtv1.VirtualMachineList{
			ListMeta: metav1.ListMeta{Continue: "more"},
			Items:    []kubevirtv1.VirtualMachine{*vmB.(*kubevirtv1.VirtualMachine)},
		}, nil
	})
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewDiffOptions(streams)
	o.Getenv = func(string) string { return "" }
	f := opFactory(t, kube, virt)
	f.Dynamic = dyn
	err := opRun(t.Context(), f, newCmdDiff(f, o))
	if code := opExitCode(err); code != 2 || !strings.Contains(err.Error(), "etcd went away") {
		t.Errorf("exit %d (%v), want 2 and the failed LIST", code, err)
	}
	if !strings.Contains(out.String(), "+++ vms/web-web-b (derived from VM revision ") {
		t.Errorf("the first page's diff is not out before the second page failed:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// TestDiffWarnsOfAVMWithNoRevision: a VM with vmctl's markers that records
// no VM revision (a copy of a derived VM, or one edited by hand) is no
// agent's making, so diff warns of it and compares the others: it counts
// as neither drift nor an error.
func TestDiffWarnsOfAVMWithNoRevision(t *testing.T) {
	web := opPrototype("vms", "web", 1)
	rev, hash, store := diffRevision(t, web, "vms", "web")
	unpinned := opDerived(t, rev, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour)
	ofRevision := opDerived(t, rev, opPod("vms", "web-c", "node-1", "web", time.Hour), time.Hour, pinnedTo(hash))
	_, errOut, _, err := runDiff(t, []runtime.Object{store}, []runtime.Object{web, unpinned, ofRevision})
	want := "Warning: vms/web-web-a: no VM revision recorded, so no agent of this vmctl made the VM as it is (a copy, or edited by hand?); " +
		"where a Pod owns it, `kubectl vmctl rollout restart web` replaces that Pod, and the VM with one of a pinned revision\n" +
		"0 of 1 derived VMs drifted in vms namespace\n"
	if got := opExitCode(err); got != 0 || errOut != want {
		t.Errorf("exit %d (%v), stderr %q; want 0 and %q", got, err, errOut, want)
	}
}

// TestDiffExternalProgram: with KUBECTL_EXTERNAL_DIFF set, as kubectl diff
// does, diff(1) compares two directories once: a drifted VM's file and a
// workload's pinned revision's, named as the help says, "-" what is and
// "+" what would be; drift still exits 1, and the directories are gone
// afterwards. A program that fails (exit 3) is an error, exit 2.
func TestDiffExternalProgram(t *testing.T) {
	t.Setenv(externalDiffEnv, "diff -u -N")
	kubeObjs, virtObjs := diffScene(t)
	out, errOut, _, err := runDiffWith(t, os.Getenv, kubeObjs, virtObjs)
	if got := opExitCode(err); got != 1 {
		t.Errorf("exit code = %d (%v), want 1", got, err)
	}
	if want := "1 of 2 derived VMs drifted in vms namespace\n"; errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	var dirs []string
	for _, line := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(line, "--- "); ok {
			dirs = append(dirs, filepath.Dir(strings.Fields(f)[0]))
		}
	}
	for _, want := range []string{"/LIVE-", "kubevirt.io.v1.VirtualMachine.vms.web-web-b\t", "/MERGED-", "\n-          cores: 2\n", "\n+          cores: 4\n",
		"\n-          image: quay.io/containerdisks/fedora:40\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff(1) output lacks %q:\n%s", want, out)
		}
	}
	if len(dirs) != 1 {
		t.Fatalf("diff(1) compared %d files, want the one VM that drifted:\n%s", len(dirs), out)
	}
	if _, err := os.Stat(dirs[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is left behind: %v", dirs[0], err)
	}

	kubeObjs, hash, web := diffPinnedScene(t)
	vm := opDerived(t, web.DeepCopy(), opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour, pinnedTo(hash))
	web.Generation = 2
	web.Spec.Template.Spec.Domain.CPU.Cores = 2
	out, _, _, err = runDiffWith(t, os.Getenv, kubeObjs, []runtime.Object{web, vm})
	if got := opExitCode(err); got != 1 {
		t.Errorf("exit code = %d (%v), want 1", got, err)
	}
	for _, want := range []string{"vm-revision-of.vms.deployment.apps.web\t", "\n-          cores: 1\n", "\n+          cores: 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff(1) output lacks %q:\n%s", want, out)
		}
	}

	failing := filepath.Join(t.TempDir(), "failing-diff")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(externalDiffEnv, failing)
	kubeObjs, virtObjs = diffScene(t)
	_, _, _, err = runDiffWith(t, os.Getenv, kubeObjs, virtObjs)
	if got := opExitCode(err); got != 2 || !strings.Contains(fmt.Sprint(err), externalDiffEnv) || !strings.Contains(fmt.Sprint(err), "exit status 3") {
		t.Errorf("with a failing program: exit code %d, %v; want 2 and an error naming %s and its exit status", got, err, externalDiffEnv)
	}
}
