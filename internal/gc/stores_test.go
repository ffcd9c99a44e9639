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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

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

// store is workload's revision store, written age ago, holding hashes.
func store(t *testing.T, ns, workload string, age time.Duration, hashes ...string) appsv1.ControllerRevision {
	t.Helper()
	s := revision.NewStore(ns, workload)
	s.Number = 3
	for _, h := range hashes {
		s.Revisions[h] = &revision.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"rev": h}}}
	}
	cr, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	cr.UID, cr.ResourceVersion, cr.CreationTimestamp = types.UID("uid-"+cr.Name), "41", metav1.NewTime(t0.Add(-age))
	cr.Annotations = map[string]string{"note": "kept"}
	return *cr
}

func TestRetained(t *testing.T) {
	got := Retained(Templates{
		Pods:         []corev1.Pod{pinnedPod("ns", "web-abc-1", "web-vm-revisions", "1111111111"), pinnedPod("ns", "legacy-1", "", "")},
		Deployments:  []appsv1.Deployment{deployment("ns", "web", "2222222222")},
		ReplicaSets:  []appsv1.ReplicaSet{replicaSet("ns", "web", "0000000000"), replicaSet("other", "web", "9999999999")},
		StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Template: template("db-vm-revisions", "3333333333")}}},
		DaemonSets:   []appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "node"}, Spec: appsv1.DaemonSetSpec{Template: template("node-vm-revisions", "")}}},
		ControllerRevisions: []appsv1.ControllerRevision{
			history(t, "ns", "db", "4444444444", 1),
			store(t, "ns", "db", time.Hour, "5555555555"), // a store names nothing
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
			Deployments:         []appsv1.Deployment{deployment("ns", "web", "2222222222")},
			ReplicaSets:         []appsv1.ReplicaSet{replicaSet("ns", "web", "1111111111")},
			ControllerRevisions: []appsv1.ControllerRevision{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
	}, {
		name: "revisions no retained template names go; the store is replaced with the rest",
		templates: Templates{
			Pods:        []corev1.Pod{pinnedPod("ns", "web-old-1", "web-vm-revisions", "1111111111")},
			Deployments: []appsv1.Deployment{deployment("ns", "web", "2222222222")},
			ControllerRevisions: []appsv1.ControllerRevision{
				store(t, "ns", "web", time.Hour, "0000000000", "1111111111", "2222222222", "ffffffffff"),
				history(t, "ns", "web", "ffffffffff", 1), // another workload's history would name another store
			},
		},
		want: []brief{{Name: "web-vm-revisions", Pruned: []string{"0000000000"}, Kept: []string{"1111111111", "2222222222", "ffffffffff"},
			Why: "VM revision 0000000000 named by no template"}},
	}, {
		name: "the store of a workload that is gone is deleted, with the revisions no one names",
		templates: Templates{
			StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Template: template("db-vm-revisions", "3333333333")}}},
			ControllerRevisions: []appsv1.ControllerRevision{
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
			Pods:                []corev1.Pod{pinnedPod("ns", "web-abc-1", "web-vm-revisions", "1111111111")},
			ControllerRevisions: []appsv1.ControllerRevision{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
		want: []brief{{Name: "web-vm-revisions", Pruned: []string{"2222222222"}, Kept: []string{"1111111111"}, Why: "VM revision 2222222222 named by no template"}},
	}, {
		name: "a workload rolled back to a template that pins nothing: its store goes",
		templates: Templates{
			Deployments:         []appsv1.Deployment{deployment("ns", "web", "")},
			ControllerRevisions: []appsv1.ControllerRevision{store(t, "ns", "web", time.Hour, "1111111111", "2222222222")},
		},
		want: []brief{{Name: "web-vm-revisions", Delete: true, Pruned: []string{"1111111111", "2222222222"}, Why: "no template names its VM revisions"}},
	}, {
		name: "a young store, one being deleted and one gc cannot read are left alone",
		templates: Templates{
			ControllerRevisions: []appsv1.ControllerRevision{
				store(t, "ns", "young", 30*time.Second, "1111111111"),
				func() appsv1.ControllerRevision {
					cr := store(t, "ns", "leaving", time.Hour, "1111111111")
					cr.DeletionTimestamp = &metav1.Time{Time: t0}
					return cr
				}(),
				func() appsv1.ControllerRevision {
					cr := store(t, "ns", "broken", time.Hour, "1111111111")
					cr.Data.Raw = []byte(`{"revisions": [1]}`)
					return cr
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
					if r.Revision != 4 || r.Labels[contract.LabelWorkload] == "" || r.Annotations["note"] != "kept" || r.UID != "" || r.ResourceVersion != "" {
						t.Errorf("replacement of %s: revision %d, metadata %+v; want revision 4, the labels and annotations, no identity", a.Name, r.Revision, r.ObjectMeta)
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

// TestCollect: a store is deleted on condition that it is the one gc
// read, unchanged; a replacement is tried first, as a dry run, so one the
// API server refuses leaves the store as it was.
func TestCollect(t *testing.T) {
	plan := func(t *testing.T, cr appsv1.ControllerRevision, templates Templates) StoreAction {
		templates.ControllerRevisions = []appsv1.ControllerRevision{cr}
		actions, _ := PlanStores(templates, t0, time.Minute)
		if len(actions) != 1 {
			t.Fatalf("%d actions, want 1", len(actions))
		}
		return actions[0]
	}
	pruned := func(t *testing.T) (appsv1.ControllerRevision, StoreAction) {
		cr := store(t, "ns", "web", time.Hour, "1111111111", "2222222222")
		return cr, plan(t, cr, Templates{Deployments: []appsv1.Deployment{deployment("ns", "web", "2222222222")}})
	}
	describe := func(a k8stesting.Action) string {
		s := a.GetVerb()
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			s += fmt.Sprintf(" dryRun=%v", a.CreateOptions.DryRun)
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
		{name: "for real", want: []string{"create dryRun=[All]", "delete uid=uid-web-vm-revisions rv=41 dryRun=[]", "create dryRun=[]"}},
		{name: "server dry run", dryRun: []string{metav1.DryRunAll}, want: []string{"create dryRun=[All]", "delete uid=uid-web-vm-revisions rv=41 dryRun=[All]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr, a := pruned(t)
			kc := kubefake.NewClientset(&cr)
			kc.ClearActions()
			if err := Collect(t.Context(), kc, a, tt.dryRun); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, act := range kc.Actions() {
				got = append(got, describe(act))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a deletion is one request", func(t *testing.T) {
		cr := store(t, "ns", "gone", time.Hour, "1111111111")
		kc := kubefake.NewClientset(&cr)
		kc.ClearActions()
		if err := Collect(t.Context(), kc, plan(t, cr, Templates{}), nil); err != nil {
			t.Fatal(err)
		}
		if len(kc.Actions()) != 1 || kc.Actions()[0].GetVerb() != "delete" {
			t.Errorf("requests %v, want one delete", kc.Actions())
		}
	})

	t.Run("a refused replacement leaves the store", func(t *testing.T) {
		cr, a := pruned(t)
		kc := kubefake.NewClientset(&cr)
		kc.PrependReactor("create", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), cr.Name, errors.New("no"))
		})
		kc.ClearActions()
		if err := Collect(t.Context(), kc, a, nil); !apierrors.IsForbidden(err) {
			t.Errorf("Collect: %v, want the refusal", err)
		}
		for _, act := range kc.Actions() {
			if act.GetVerb() == "delete" {
				t.Errorf("the store was deleted though its replacement was refused")
			}
		}
	})

	t.Run("a store replaced meanwhile is a conflict", func(t *testing.T) {
		cr, a := pruned(t)
		kc := kubefake.NewClientset(&cr)
		kc.PrependReactor("delete", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(appsv1.Resource("controllerrevisions"), cr.Name, errors.New("the precondition failed"))
		})
		err := Collect(t.Context(), kc, a, nil)
		if !apierrors.IsConflict(err) {
			t.Errorf("Collect: %v, want the conflict", err)
		}
		if got, err := kc.AppsV1().ControllerRevisions("ns").Get(t.Context(), cr.Name, metav1.GetOptions{}); err != nil || !strings.Contains(string(got.Data.Raw), "1111111111") {
			t.Errorf("the store after a conflict: %v", err)
		}
	})
}
