package kube

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"
)

// TestListPodsFollowsPages: PageSize objects a page, the continue token
// passed on, and each Pod kept slim.
func TestListPodsFollowsPages(t *testing.T) {
	kc := kubefake.NewClientset()
	var seen []metav1.ListOptions
	kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		seen = append(seen, opts)
		pod := func(name string) corev1.Pod {
			return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
		}
		page := &corev1.PodList{}
		switch opts.Continue {
		case "":
			page.Items, page.Continue = []corev1.Pod{pod("a")}, "page-2"
		case "page-2":
			page.Items = []corev1.Pod{pod("b")}
		}
		return true, page, nil
	})
	pods, err := ListPods(t.Context(), kc, "ns", "app=web")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Name != "a" || pods[1].Name != "b" || pods[0].ManagedFields != nil {
		t.Errorf("got %+v, want slim a and b from two pages", pods)
	}
	want := []metav1.ListOptions{
		{LabelSelector: "app=web", Limit: PageSize},
		{LabelSelector: "app=web", Limit: PageSize, Continue: "page-2"},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
}

// TestEachVMPageErrors: a failed LIST says what it listed; what fn returns
// comes back as it is, and no page is asked for after it.
func TestEachVMPageErrors(t *testing.T) {
	virt := kubevirtfake.NewSimpleClientset()
	virt.PrependReactor("list", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListActionImpl).ListOptions.Continue != "" {
			return true, nil, errors.New("etcd went away")
		}
		return true, &kubevirtv1.VirtualMachineList{ListMeta: metav1.ListMeta{Continue: "more"}}, nil
	})
	pages := 0
	err := EachVMPage(t.Context(), virt, "vms", "", func([]kubevirtv1.VirtualMachine) error { pages++; return nil })
	if want := `list virtualmachines in namespace "vms": etcd went away`; err == nil || err.Error() != want || pages != 1 {
		t.Errorf("EachVMPage: %v after %d pages, want %q after 1", err, pages, want)
	}
	stop := errors.New("stop")
	err = EachVMPage(t.Context(), virt, "", "", func([]kubevirtv1.VirtualMachine) error { return stop })
	if !errors.Is(err, stop) || strings.Count(strings.Join(actions(virt.Actions()), " "), "list") != 3 {
		t.Errorf("EachVMPage: %v after %v, want fn's error as it is, after one more LIST", err, actions(virt.Actions()))
	}
}

func actions(acts []k8stesting.Action) []string {
	var out []string
	for _, a := range acts {
		out = append(out, a.GetVerb())
	}
	return out
}
