package gc

import (
	"encoding/json"
	"errors"
	"fmt"
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
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// template pins VM revision hash of store (a workload's), as scaffold
// writes it; with no hash, it pins none.
func template(store, hash string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Args: []string{"web"}}}}}
	if hash != "" {
		t.Annotations = map[string]string{contract.AnnotationVMRevision: hash}
		t.Spec.Containers[0].Args = append(t.Spec.Containers[0].Args, "--"+contract.FlagVMRevisions+"="+store)
	}
	return t
}

func pinnedPod(ns, name, store, hash string) corev1.Pod {
	t := template(store, hash)
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: t.Annotations}, Spec: t.Spec}
}

func deployment(ns, name, hash string) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Template: template(revision.StoreName(name), hash)}}
}

func replicaSet(ns, deployment, hash string) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: deployment + "-" + hash},
		Spec: appsv1.ReplicaSetSpec{Template: template(revision.StoreName(deployment), hash)}}
}

// history is a StatefulSet's or DaemonSet's ControllerRevision of a
// template that pins hash, its data the patch the controller keeps.
func history(t *testing.T, ns, workload, hash string, number int64) appsv1.ControllerRevision {
	t.Helper()
	tmpl := template(revision.StoreName(workload), hash)
	raw, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"$patch": "replace", "metadata": tmpl.ObjectMeta, "spec": tmpl.Spec,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", workload, number)},
		Data: runtime.RawExtension{Raw: raw}, Revision: number}
}

// store is workload's revision store, written age ago, holding hashes,
// each stored as long ago.
func store(t *testing.T, ns, workload string, age time.Duration, hashes ...string) unstructured.Unstructured {
	t.Helper()
	s := revision.NewStore(ns, workload)
	for _, h := range hashes {
		s.Revisions[h] = &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"rev": h},
			CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
	}
	u, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	u.SetUID(types.UID("uid-" + u.GetName()))
	u.SetResourceVersion("41")
	u.SetCreationTimestamp(metav1.NewTime(t0.Add(-age)))
	u.SetAnnotations(map[string]string{"note": "kept"})
	return *u
}

func TestRetained(t *testing.T) {
	got := Retained(Templates{
		Pods:         []corev1.Pod{pinnedPod("ns", "web-abc-1", "web-vm-revisions", "1111111111"), pinnedPod("ns", "legacy-1", "", "")},
		Deployments:  []appsv1.Deployment{deployment("ns", "web", "2222222222")},
		ReplicaSets:  []appsv1.ReplicaSet{replicaSet("ns", "web", "0000000000"), replicaSet("other", "web", "9999999999")},
		StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Template: template("db-vm-revisions", "3333333333")}}},
		DaemonSets:   []appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "node"}, Spec: appsv1.DaemonSetSpec{Template: template("node-vm-revisions", "")}}},
		Stores:       []unstructured.Unstructured{store(t, "ns", "db", time.Hour, "5555555555")}, // a store names nothing
		ControllerRevisions: []appsv1.ControllerRevision{
			history(t, "ns", "db", "4444444444", 1),
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "instancetype"}, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"cpu":{"guest":2}}}`)}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "garbage"}, Data: runtime.RawExtension{Raw: []byte(`[`)}},
		},
	})
	want := map[types.NamespacedName]map[string]bool{
		{Namespace: "ns", Name: "web-vm-revisions"}:    {"0000000000": true, "1111111111": true, "2222222222": true},
		{Namespace: "other", Name: "web-vm-revisions"}: {"9999999999": true},
		{Namespace: "ns", Name: "db-vm-revisions"}:     {"3333333333": true, "4444444444": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Retained (-want +got):\n%s", diff)
	}
}

func TestPlanStores(t *testing.T) {
	type brief struct {
		Name         string
		Delete, Gone bool
		Pruned, Kept []string
		Why          string
	}
	tests := []struct {
		name           string
		templates      Templates
		want           []brief
		wantUnreadable []string
	}{{
		name: "every revision named: nothing to do",
		templates: Templates{
			Deployments: []appsv1.Deployment{deployment("ns", "web", "2222222222")},
			ReplicaSets: []appsv1.ReplicaSet{replicaSet("ns", "web", "1111111111")},
			Stores:      []unstructured.Unstructured{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
	}, {
		name: "revisions no retained template names go; the store is updated to the rest",
		templates: Templates{
			Pods:        []corev1.Pod{pinnedPod("ns", "web-old-1", "web-vm-revisions", "1111111111")},
			Deployments: []appsv1.Deployment{deployment("ns", "web", "2222222222")},
			Stores:      []unstructured.Unstructured{store(t, "ns", "web", time.Hour, "0000000000", "1111111111", "2222222222", "ffffffffff")},
			ControllerRevisions: []appsv1.ControllerRevision{
				history(t, "ns", "web", "ffffffffff", 1), // another workload's history would name another store
			},
		},
		want: []brief{{Name: "web-vm-revisions", Pruned: []string{"0000000000"}, Kept: []string{"1111111111", "2222222222", "ffffffffff"},
			Why: "VM revision 0000000000 named by no template"}},
	}, {
		name: "the store of a workload that is gone is deleted, with the revisions no one names",
		templates: Templates{
			StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Template: template("db-vm-revisions", "3333333333")}}},
			Stores: []unstructured.Unstructured{
				store(t, "ns", "web", time.Hour, "1111111111", "2222222222"),
				store(t, "ns", "db", time.Hour, "3333333333", "4444444444"),
				store(t, "other", "db", time.Hour, "3333333333"), // a db elsewhere is not this one
			},
		},
		want: []brief{
			{Name: "db-vm-revisions", Pruned: []string{"4444444444"}, Kept: []string{"3333333333"}, Why: "VM revision 4444444444 named by no template"},
			{Name: "web-vm-revisions", Delete: true, Gone: true, Pruned: []string{"1111111111", "2222222222"}, Why: "no Deployment, StatefulSet or DaemonSet web"},
			{Name: "db-vm-revisions", Delete: true, Gone: true, Pruned: []string{"3333333333"}, Why: "no Deployment, StatefulSet or DaemonSet db"},
		},
	}, {
		name: "a workload deleted with its Pods orphaned: its store keeps what they pin",
		templates: Templates{
			Pods:   []corev1.Pod{pinnedPod("ns", "web-abc-1", "web-vm-revisions", "1111111111")},
			Stores: []unstructured.Unstructured{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
		want: []brief{{Name: "web-vm-revisions", Pruned: []string{"2222222222"}, Kept: []string{"1111111111"}, Why: "VM revision 2222222222 named by no template"}},
	}, {
		name: "a workload rolled back to a template that pins nothing: its store goes",
		templates: Templates{
			Deployments: []appsv1.Deployment{deployment("ns", "web", "")},
			Stores:      []unstructured.Unstructured{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
		want: []brief{{Name: "web-vm-revisions", Delete: true, Pruned: []string{"1111111111", "2222222222"}, Why: "no template names its VM revisions"}},
	}, {
		name: "a revision a rollout has just added is kept: the template that names it is on its way",
		templates: Templates{
			Deployments: []appsv1.Deployment{deployment("ns", "web", "1111111111")},
			Stores: []unstructured.Unstructured{func() unstructured.Unstructured {
				u := store(t, "ns", "web", time.Hour, "0000000000", "1111111111")
				s, _ := revision.FromObject(&u)
				s.Revisions["2222222222"] = &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web",
					CreationTimestamp: metav1.NewTime(t0.Add(-30 * time.Second))}}
				added, _ := s.Object()
				u.Object["spec"] = added.Object["spec"]
				return u
			}()},
		},
		want: []brief{{Name: "web-vm-revisions", Pruned: []string{"0000000000"}, Kept: []string{"1111111111", "2222222222"},
			Why: "VM revision 0000000000 named by no template"}},
	}, {
		name: "a young store, one being deleted and one gc cannot read are left alone",
		templates: Templates{
			Stores: []unstructured.Unstructured{
				store(t, "ns", "young", 30*time.Second, "1111111111"),
				func() unstructured.Unstructured {
					u := store(t, "ns", "leaving", time.Hour, "1111111111")
					u.SetDeletionTimestamp(&metav1.Time{Time: t0})
					return u
				}(),
				func() unstructured.Unstructured {
					u := store(t, "ns", "broken", time.Hour, "1111111111")
					u.Object["spec"] = map[string]any{"revisions": []any{int64(1)}}
					return u
				}(),
			},
		},
		wantUnreadable: []string{"ns/broken-vm-revisions"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			actions, unreadable := PlanStores(tt.templates, t0, time.Minute)
			var got []brief
			for _, a := range actions {
				b := brief{Name: a.Name, Delete: a.Delete, Gone: a.WorkloadGone, Pruned: a.Pruned, Why: a.Why()}
				if a.Replacement != nil {
					s, err := revision.FromObject(a.Replacement)
					if err != nil {
						t.Fatal(err)
					}
					b.Kept = s.Hashes()
					r := a.Replacement
					if r.GetLabels()[contract.LabelWorkload] == "" || r.GetAnnotations()["note"] != "kept" || r.GetUID() != a.UID || r.GetResourceVersion() != "41" {
						t.Errorf("replacement of %s: metadata %+v; want the store's, its resourceVersion too", a.Name, r.Object["metadata"])
					}
				}
				if a.UID != types.UID("uid-"+a.Name) || a.ResourceVersion != "41" {
					t.Errorf("action on %s: uid %q, resourceVersion %q; want the store's", a.Name, a.UID, a.ResourceVersion)
				}
				got = append(got, b)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanStores (-want +got):\n%s", diff)
			}
			var names []string
			for _, u := range unreadable {
				names = append(names, u.Namespace+"/"+u.Name)
			}
			if diff := cmp.Diff(tt.wantUnreadable, names); diff != "" {
				t.Errorf("unreadable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCollect: a store is deleted, or updated to its replacement, on
// condition that it is the one gc read, unchanged.
func TestCollect(t *testing.T) {
	plan := func(t *testing.T, u unstructured.Unstructured, templates Templates) StoreAction {
		templates.Stores = []unstructured.Unstructured{u}
		actions, _ := PlanStores(templates, t0, time.Minute)
		if len(actions) != 1 {
			t.Fatalf("%d actions, want 1", len(actions))
		}
		return actions[0]
	}
	pruned := func(t *testing.T) (unstructured.Unstructured, StoreAction) {
		u := store(t, "ns", "web", time.Hour, "1111111111", "2222222222")
		return u, plan(t, u, Templates{Deployments: []appsv1.Deployment{deployment("ns", "web", "2222222222")}})
	}
	client := func(u unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
		dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{revision.StoreGVR: revision.StoreKind + "List"}, &u)
		dc.ClearActions()
		return dc
	}
	describe := func(a k8stesting.Action) string {
		s := a.GetVerb()
		switch a := a.(type) {
		case k8stesting.UpdateActionImpl:
			u := a.GetObject().(*unstructured.Unstructured)
			s += fmt.Sprintf(" uid=%s rv=%s dryRun=%v", u.GetUID(), u.GetResourceVersion(), a.UpdateOptions.DryRun)
		case k8stesting.DeleteAction:
			o := a.GetDeleteOptions()
			s += fmt.Sprintf(" uid=%s rv=%s dryRun=%v", *o.Preconditions.UID, *o.Preconditions.ResourceVersion, o.DryRun)
		}
		return s
	}
	for _, tt := range []struct {
		name   string
		dryRun []string
		want   []string
	}{
		{name: "for real", want: []string{"update uid=uid-web-vm-revisions rv=41 dryRun=[]"}},
		{name: "server dry run", dryRun: []string{metav1.DryRunAll}, want: []string{"update uid=uid-web-vm-revisions rv=41 dryRun=[All]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, a := pruned(t)
			dc := client(u)
			if err := Collect(t.Context(), dc, a, tt.dryRun); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, act := range dc.Actions() {
				got = append(got, describe(act))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a deletion is one request", func(t *testing.T) {
		u := store(t, "ns", "gone", time.Hour, "1111111111")
		dc := client(u)
		if err := Collect(t.Context(), dc, plan(t, u, Templates{}), nil); err != nil {
			t.Fatal(err)
		}
		if got := dc.Actions(); len(got) != 1 || describe(got[0]) != "delete uid=uid-gone-vm-revisions rv=41 dryRun=[]" {
			t.Errorf("requests %v, want one delete on condition", got)
		}
	})

	t.Run("a store changed meanwhile is a conflict", func(t *testing.T) {
		u, a := pruned(t)
		dc := client(u)
		dc.PrependReactor("update", revision.StoreResource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(revision.StoreGVR.GroupResource(), u.GetName(), errors.New("the object has been modified"))
		})
		if err := Collect(t.Context(), dc, a, nil); !apierrors.IsConflict(err) {
			t.Errorf("Collect: %v, want the conflict", err)
		}
		got, err := dc.Resource(revision.StoreGVR).Namespace("ns").Get(t.Context(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := revision.FromObject(got); !strings.Contains(strings.Join(s.Hashes(), " "), "1111111111") {
			t.Errorf("the store after a conflict holds %v", s.Hashes())
		}
	})
}
