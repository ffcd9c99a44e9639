package fakeapi

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func TestSelectNames(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	cs := kubefake.NewClientset(pod("a"), pod("b"))
	SelectNames(&cs.Fake, cs.Tracker())
	pods := cs.CoreV1().Pods("ns")
	ctx := context.Background()
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "b").String()}

	list, err := pods.List(ctx, byName)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Errorf("list by name b: got %d items %v, want only b", len(list.Items), list.Items)
	}
	all, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 2 {
		t.Errorf("list without a selector: got %d items, want 2", len(all.Items))
	}

	w, err := pods.Watch(ctx, byName)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, pod("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if p := ev.Object.(*corev1.Pod); p.Name != "b" {
			t.Errorf("watch by name b saw %s %s", ev.Type, p.Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch by name b saw nothing of b's deletion")
	}
	select {
	case ev := <-w.ResultChan():
		t.Errorf("watch by name b saw %s %s besides b's deletion", ev.Type, ev.Object.(*corev1.Pod).Name)
	case <-time.After(100 * time.Millisecond):
	}
}
