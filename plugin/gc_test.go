package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// gcScene is opScene plus orphans of every kind: in vms, web-web-gone (2h,
// pod gone), web-web-young (30s, pod gone: too young), web-web-r (pod
// replaced), a terminating one, and one without vmctl's labels; in team2,
// db-db-old (pod gone).
func gcScene(t *testing.T) (kube, virt []runtime.Object) {
	t.Helper()
	kube, virt = opScene(t)
	web := opPrototype("vms", "web", 5)
	db := opPrototype("team2", "db", 1)
	young := opDerived(t, web, opPod("vms", "web-young", "node-1", "web", time.Minute), 30*time.Second)
	oldR := opPod("vms", "web-r", "node-1", "web", 3*time.Hour)
	replaced := opDerived(t, web, oldR, 3*time.Hour)
	newR := opPod("vms", "web-r", "node-1", "web", time.Minute)
	newR.UID = "uid-web-r-2"
	terminating := opDerived(t, web, opPod("vms", "web-t", "node-1", "web", time.Hour), time.Hour)
	terminating.DeletionTimestamp = &metav1Time
	notOurs := opDerived(t, web, opPod("vms", "web-x", "node-1", "web", time.Hour), time.Hour)
	notOurs.Name = "not-ours"
	notOurs.Labels = map[string]string{"app": "web"}
	dbOld := opDerived(t, db, opPod("team2", "old", "node-1", "db", time.Hour), time.Hour)
	kube = append(kube, newR)
	virt = append(virt, young, replaced, terminating, notOurs, dbOld)
	return kube, virt
}

var metav1Time = opAgo(time.Second)

// runGC runs `kubectl vmctl gc args...` against fakes holding the objects.
func runGC(t *testing.T, kubeObjs, virtObjs []runtime.Object, react k8stesting.ReactionFunc, args ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	kube, virt, dyn, log := opFakesWithStores(kubeObjs, virtObjs)
	if react != nil {
		virt.PrependReactor("delete", "virtualmachines", react)
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewGCOptions(streams)
	o.Now = func() time.Time { return opNow }
	f := opFactory(t, kube, virt)
	f.Dynamic = dyn
	err = opRun(t.Context(), f, newCmdGC(f, o), args...)
	return out.String(), errOut.String(), *log, err
}

func TestGC(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		golden    string
		wantCalls []string
	}{{
		name:   "current namespace",
		golden: "gc/namespace.txt",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"delete virtualmachines vms web-web-gone uid=uid-vm-web-web-gone",
			"delete virtualmachines vms web-web-r uid=uid-vm-web-web-r",
		},
	}, {
		name:   "all namespaces",
		args:   []string{"-A"},
		golden: "gc/all-namespaces.txt",
		wantCalls: []string{
			"list virtualmachines  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods ",
			"list virtualmachineinstances  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores ",
			"delete virtualmachines team2 db-old uid=uid-vm-db-old",
			"delete virtualmachines vms web-web-gone uid=uid-vm-web-web-gone",
			"delete virtualmachines vms web-web-r uid=uid-vm-web-web-r",
		},
	}, {
		name:   "client dry run deletes nothing",
		args:   []string{"--dry-run=client"},
		golden: "gc/dry-run-client.txt",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
		},
	}, {
		name:   "server dry run asks the server",
		args:   []string{"--dry-run=server"},
		golden: "gc/dry-run-server.txt",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"delete virtualmachines vms web-web-gone uid=uid-vm-web-web-gone dryRun=All",
			"delete virtualmachines vms web-web-r uid=uid-vm-web-web-r dryRun=All",
		},
	}, {
		name:   "min age spares the young and -o name",
		args:   []string{"--min-age=10s", "-o", "name"},
		golden: "gc/min-age-name.txt",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"delete virtualmachines vms web-web-gone uid=uid-vm-web-web-gone",
			"delete virtualmachines vms web-web-r uid=uid-vm-web-web-r",
			"delete virtualmachines vms web-web-young uid=uid-vm-web-web-young",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube, virt := gcScene(t)
			out, errOut, calls, err := runGC(t, kube, virt, nil, tt.args...)
			if err != nil {
				t.Fatalf("gc: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
			opGolden(t, tt.golden, out)
		})
	}
}

func TestGCFollowsPodsIntoOtherNamespaces(t *testing.T) {
	web := opPrototype("vms", "web", 5)
	pod := opPod("pods", "web-0", "node-1", "web", time.Hour)
	vm := opDerived(t, web, pod, time.Hour) // a VM in vms for a Pod in pods: no ownerReference possible
	vm.Namespace = "vms"
	out, errOut, calls, err := runGC(t, []runtime.Object{pod}, []runtime.Object{vm}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
		"list pods vms",
		"list pods pods",
		"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
		"list vmrevisionstores vms",
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	if out != "" || errOut != "No orphaned VMs or VMIs, nor unused VM revisions, found in vms namespace.\n" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

func TestGCDeleteRaces(t *testing.T) {
	kube, virt := gcScene(t)
	gr := schema.GroupResource{Group: kubevirtv1.SchemeGroupVersion.Group, Resource: "virtualmachines"}
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.(k8stesting.DeleteAction).GetName() {
		case "web-web-gone":
			return true, nil, apierrors.NewNotFound(gr, "web-web-gone")
		case "web-web-r":
			return true, nil, apierrors.NewConflict(gr, "web-web-r", nil)
		}
		return false, nil, nil
	}
	out, errOut, _, err := runGC(t, kube, virt, react)
	if err != nil {
		t.Fatalf("races are not errors: %v", err)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing deleted", out)
	}
	want := "virtualmachine.kubevirt.io/web-web-gone already gone from vms namespace\n" +
		"virtualmachine.kubevirt.io/web-web-r in vms namespace skipped: replaced since it was listed\n"
	if diff := cmp.Diff(want, errOut); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

func TestGCDeleteErrorsAreReportedAfterTheRest(t *testing.T) {
	kube, virt := gcScene(t)
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "web-web-gone" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: kubevirtv1.SchemeGroupVersion.Group, Resource: "virtualmachines"}, "web-web-gone", nil)
		}
		return false, nil, nil
	}
	out, _, _, err := runGC(t, kube, virt, react)
	if err == nil || !strings.Contains(err.Error(), "web-web-gone") {
		t.Fatalf("err = %v, want the forbidden delete of web-web-gone", err)
	}
	if !strings.Contains(out, "web-web-r deleted") {
		t.Errorf("the other orphan was not deleted after the failure:\n%s", out)
	}
}

func TestGCFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--dry-run=maybe"},
		{"--min-age=-1s"},
		{"-o", "json"},
		{"extra-arg"},
	} {
		_, _, calls, err := runGC(t, nil, nil, nil, args...)
		if err == nil {
			t.Errorf("gc %v: no error", args)
		}
		if len(calls) != 0 {
			t.Errorf("gc %v called the API: %v", args, calls)
		}
	}
}

// TestGCSparesPrototypes: someone made prototypes by copying derived VMs
// whose Pods are gone: web-web-a kept its name, golden was renamed. An
// agent Pod runs each. gc deletes neither: golden lost the ownerReference
// to its Pod, so it is no agent's VM, and web-web-a is a live agent's
// prototype, which gc says.
func TestGCSparesPrototypes(t *testing.T) {
	web := opPrototype("vms", "web", 5)
	kept := opDerived(t, web, opPod("vms", "web-a", "node-1", "web", time.Hour), time.Hour)
	golden := opDerived(t, web, opPod("vms", "web-b", "node-1", "web", time.Hour), time.Hour)
	golden.Name, golden.UID, golden.OwnerReferences = "golden", "uid-golden", nil
	g0 := opPod("vms", "g-0", "node-1", "web-web-a", time.Hour)
	g1 := opPod("vms", "g-1", "node-1", "golden", time.Hour)
	out, errOut, calls, err := runGC(t, []runtime.Object{g0, g1}, []runtime.Object{web, kept, golden}, nil, "--min-age=0s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if strings.HasPrefix(c, "delete") {
			t.Errorf("gc sent %s", c)
		}
	}
	want := "virtualmachine.kubevirt.io/web-web-a in vms namespace left alone: pod vms/g-0 names it as its prototype\n" +
		"No orphaned VMs or VMIs, nor unused VM revisions, found in vms namespace.\n"
	if out != "" || errOut != want {
		t.Errorf("stdout %q, stderr (-want +got):\n%s", out, cmp.Diff(want, errOut))
	}
}

// gcStoreScene is, in vms, Deployment web whose template pins revision
// 2222222222 and whose older ReplicaSet pins 1111111111, with a Pod of
// that; web's store holds those and 0000000000, which nothing names; and
// the store of Deployment gone, which no longer exists. young's store,
// written 30s ago, names nothing either. Every store holds revisions of
// prototype vms/web.
func gcStoreScene(t *testing.T) []runtime.Object {
	t.Helper()
	pin := func(tmpl *corev1.PodTemplateSpec, workload, hash string) {
		tmpl.Annotations = map[string]string{contract.AnnotationVMRevision: hash}
		tmpl.Spec.Containers = []corev1.Container{{Name: "agent", Args: []string{"web", "--vm-revisions=" + revision.StoreName(workload)}}}
	}
	store := func(workload string, age time.Duration, hashes ...string) *unstructured.Unstructured {
		s := revision.NewStore("vms", workload)
		for _, h := range hashes {
			s.Revisions[h] = revision.Snapshot(opPrototype("vms", "web", 1))
		}
		u, err := s.Object()
		if err != nil {
			t.Fatal(err)
		}
		u.SetUID(types.UID("uid-" + u.GetName()))
		u.SetCreationTimestamp(opAgo(age))
		return u
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "web"}}
	pin(&web.Spec.Template, "web", "2222222222")
	old := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "web-1111"}}
	pin(&old.Spec.Template, "web", "1111111111")
	podOld := opPod("vms", "web-1111-a", "node-1", "web", time.Hour)
	podOld.Annotations = map[string]string{contract.AnnotationVMRevision: "1111111111"}
	podOld.Spec.Containers[0].Args = append(podOld.Spec.Containers[0].Args, "--vm-revisions=web-vm-revisions")
	return []runtime.Object{web, old, podOld,
		store("web", time.Hour, "0000000000", "1111111111", "2222222222"),
		store("gone", time.Hour, "1111111111"),
		store("young", 30*time.Second, "1111111111"),
	}
}

// TestGCRevisionStores: gc drops the revisions no retained template names
// by updating the store, deletes the store of a workload that is gone,
// leaves a young store alone, and says what it did as for VMs.
func TestGCRevisionStores(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantOut   string
		wantCalls []string
	}{{
		name: "for real",
		wantOut: "vmrevisionstore.vmctl.kubevirt.io/gone-vm-revisions deleted from vms namespace (no Deployment, StatefulSet or DaemonSet gone)\n" +
			"vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions pruned in vms namespace (VM revision 0000000000 named by no template)\n",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"list controllerrevisions vms",
			"list deployments vms", "list statefulsets vms", "list daemonsets vms", "list replicasets vms",
			"delete vmrevisionstores vms gone-vm-revisions uid=uid-gone-vm-revisions",
			"update vmrevisionstores vms",
		},
	}, {
		name: "server dry run",
		args: []string{"--dry-run=server"},
		wantOut: "vmrevisionstore.vmctl.kubevirt.io/gone-vm-revisions deleted from vms namespace (server dry run) (no Deployment, StatefulSet or DaemonSet gone)\n" +
			"vmrevisionstore.vmctl.kubevirt.io/web-vm-revisions pruned in vms namespace (server dry run) (VM revision 0000000000 named by no template)\n",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"list controllerrevisions vms",
			"list deployments vms", "list statefulsets vms", "list daemonsets vms", "list replicasets vms",
			"delete vmrevisionstores vms gone-vm-revisions uid=uid-gone-vm-revisions dryRun=All",
			"update vmrevisionstores vms",
		},
	}, {
		name:    "client dry run, -o name, and a young store too",
		args:    []string{"--dry-run=client", "-o", "name", "--min-age=10s"},
		wantOut: "vmrevisionstore.vmctl.kubevirt.io/gone-vm-revisions\nvmrevisionstore.vmctl.kubevirt.io/web-vm-revisions\nvmrevisionstore.vmctl.kubevirt.io/young-vm-revisions\n",
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list pods vms",
			"list virtualmachineinstances vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list vmrevisionstores vms",
			"list controllerrevisions vms",
			"list deployments vms", "list statefulsets vms", "list daemonsets vms", "list replicasets vms",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, calls, err := runGC(t, gcStoreScene(t), nil, nil, tt.args...)
			if err != nil {
				t.Fatalf("gc: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}
