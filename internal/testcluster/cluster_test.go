//go:build e2e

package testcluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

var (
	vmGVR  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// logWriter sends progress lines to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestCluster(t *testing.T) {
	kv, err := kubevirt.EnsureBinaries(t.Context(), "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.ForTest(t, testcluster.Options{Nodes: 3, CRDs: []string{kv.CRDs}, Log: logWriter{t}})
	t.Logf("startup took %s", c.StartupTime)
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig)
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig)

	t.Run("nodes are Ready and untainted", func(t *testing.T) {
		nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 3 {
			t.Fatalf("got %d nodes, want 3", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			if !testcluster.NodeReady(&n) {
				t.Errorf("node %s is not Ready: %+v", n.Name, n.Status.Conditions)
			}
			if len(n.Spec.Taints) != 0 {
				t.Errorf("node %s has taints %v", n.Name, n.Spec.Taints)
			}
			// What KubeVirt's launcher Pods ask of a node.
			if n.Labels["kubevirt.io/schedulable"] != "true" || n.Status.Allocatable.Name("devices.kubevirt.io/kvm", resource.DecimalSI).IsZero() {
				t.Errorf("node %s lacks KubeVirt's label or devices: labels %v, allocatable %v", n.Name, n.Labels, n.Status.Allocatable)
			}
		}
	})

	t.Run("extension API servers find the front-proxy CA", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cm.Data["requestheader-client-ca-file"], "BEGIN CERTIFICATE") || cm.Data["requestheader-username-headers"] != `["X-Remote-User"]` {
			t.Errorf("extension-apiserver-authentication lacks the requestheader settings: %v", cm.Data)
		}
	})

	t.Run("kwok runs a Deployment's pods and deletes them", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		sel := map[string]string{"app": "web"}
		_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var running []corev1.Pod
		testcluster.Eventually(t, 60*time.Second, "3 Running pods", func(ctx context.Context) (bool, error) {
			running = runningPods(ctx, t, cs, ns, sel)
			return len(running) == 3, nil
		})
		victim := running[0]
		if err := cs.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "the deleted pod to go", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		testcluster.Eventually(t, 60*time.Second, "a replacement pod", func(ctx context.Context) (bool, error) {
			return len(runningPods(ctx, t, cs, ns, sel)) == 3, nil
		})

		// Each component's requests are in the audit log under its own
		// name; the admin's (this test's) are not.
		events, err := c.ReadAudit()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, ev := range events {
			if ev.ObjectRef.Namespace != ns {
				continue
			}
			res := ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				res += "/" + ev.ObjectRef.Subresource
			}
			seen[ev.User.Username+" "+ev.Verb+" "+res] = true
			if ev.User.Username == testcluster.AdminUser {
				t.Errorf("the audit log records the admin's %s %s", ev.Verb, res)
			}
		}
		for _, want := range []string{
			"system:serviceaccount:kube-system:replicaset-controller create pods",
			"system:kube-scheduler create pods/binding",
			"vmctl-testcluster-kwok patch pods/status",
		} {
			if !seen[want] {
				t.Errorf("the audit log has no %q in namespace %s; it has %v", want, ns, seen)
			}
		}
	})

	t.Run("kwok mends a Running pod whose containers went back to waiting", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec:       corev1.PodSpec{NodeName: c.Nodes[0], Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pod = p
			return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, nil
		}
		testcluster.Eventually(t, 60*time.Second, "the pod running", running)
		// What kwok leaves when it applies an earlier stage after pod-ready.
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		pod.Status.ContainerStatuses[0].Ready = false
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "kwok to run the container again", running)
	})

	t.Run("kwok leaves vmctl agent pods alone", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		pod := func(name string, lbls map[string]string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
				Spec: corev1.PodSpec{
					NodeName:   testcluster.NodeName(1),
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			}
		}
		agentLabels := map[string]string{
			testcluster.AgentNameLabel:      testcluster.AgentNameValue,
			testcluster.AgentComponentLabel: testcluster.AgentComponentValue,
		}
		// Only one of the two labels: still an ordinary pod for kwok.
		halfLabels := map[string]string{testcluster.AgentComponentLabel: testcluster.AgentComponentValue}
		for _, p := range []*corev1.Pod{pod("agent", agentLabels), pod("half", halfLabels), pod("plain", nil)} {
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Both ordinary pods running shows kwok has processed this node's pods.
		testcluster.Eventually(t, 60*time.Second, "the ordinary pods to run", func(ctx context.Context) (bool, error) {
			for _, name := range []string{"half", "plain"} {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || p.Status.Phase != corev1.PodRunning {
					return false, err
				}
			}
			return true, nil
		})
		agent, err := cs.CoreV1().Pods(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if agent.Status.Phase != corev1.PodPending || agent.Status.PodIP != "" || len(agent.Status.ContainerStatuses) != 0 {
			t.Errorf("kwok touched the agent pod: phase %q, podIP %q, containerStatuses %v",
				agent.Status.Phase, agent.Status.PodIP, agent.Status.ContainerStatuses)
		}
	})

	t.Run("the VM CRD accepts a VM and the GC deletes what it owns", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		vm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1",
			"kind":       "VirtualMachine",
			"metadata":   map[string]any{"name": "vm1"},
			"spec": map[string]any{
				"runStrategy": "Always",
				"template": map[string]any{"spec": map[string]any{
					"domain": map[string]any{
						"devices":   map[string]any{},
						"resources": map[string]any{"requests": map[string]any{"memory": "64Mi"}},
					},
				}},
			},
		}}
		got, err := dyn.Resource(vmGVR).Namespace(ns).Create(ctx, vm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create a VM: %v", err)
		}
		if rs, _, _ := unstructured.NestedString(got.Object, "spec", "runStrategy"); rs != "Always" {
			t.Errorf("stored VM has runStrategy %q, want Always", rs)
		}
		vmi := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1",
			"kind":       "VirtualMachineInstance",
			"metadata": map[string]any{
				"name": "vm1",
				"ownerReferences": []any{map[string]any{
					"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "vm1",
					"uid": string(got.GetUID()), "controller": true, "blockOwnerDeletion": true,
				}},
			},
			"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
		}}
		if _, err := dyn.Resource(vmiGVR).Namespace(ns).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create a VMI: %v", err)
		}
		if err := dyn.Resource(vmGVR).Namespace(ns).Delete(ctx, "vm1", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 60*time.Second, "the GC to delete the owned VMI", func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(vmiGVR).Namespace(ns).Get(ctx, "vm1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	})

	t.Run("RestartControllerManager: its controllers work again after a SIGKILL", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		if err := c.RestartControllerManager(ctx, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The garbage collector, one of the restarted controllers, deletes
		// what a deleted owner owned.
		owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, owned, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 60*time.Second, "the restarted garbage collector to delete the owned ConfigMap", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "owned", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("ServiceAccount tokens authenticate and RBAC denies by default", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenRequest: %v", err)
		}
		robotCfg := rest.AnonymousClientConfig(c.RESTConfig)
		robotCfg.BearerToken = tr.Status.Token
		robot := kubernetes.NewForConfigOrDie(robotCfg)

		review, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectReview with the token: %v", err)
		}
		if want := "system:serviceaccount:" + ns + ":robot"; review.Status.UserInfo.Username != want {
			t.Errorf("token authenticates as %q, want %q", review.Status.UserInfo.Username, want)
		}
		if _, err := robot.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing pods without a RoleBinding: got %v, want Forbidden", err)
		}

		_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "robot-reads-pods"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: ns}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 10*time.Second, "the RoleBinding to allow listing pods", func(ctx context.Context) (bool, error) {
			_, err := robot.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil, err
		})

		// The audit log records every request of a ServiceAccount outside
		// kube-system and kubevirt, whatever the resource.
		events, err := c.ReadAudit()
		if err != nil {
			t.Fatal(err)
		}
		codes := map[int]int{}
		for _, ev := range events {
			if ev.User.Username == review.Status.UserInfo.Username && ev.Verb == "list" && ev.ObjectRef.Resource == "pods" {
				codes[ev.ResponseStatus.Code]++
			}
		}
		if codes[http.StatusForbidden] == 0 || codes[http.StatusOK] == 0 {
			t.Errorf("the audit log's pod lists by %s answered %v, want a 403 and a 200 at least", review.Status.UserInfo.Username, codes)
		}
	})

	t.Run("kubectl reads the server version", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			ci.Skip(t, "kubectl is not on PATH")
		}
		out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", c.Kubeconfig, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl version: %v\n%s", err, out)
		}
		var v struct {
			ServerVersion struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("parse kubectl version: %v\n%s", err, out)
		}
		if v.ServerVersion.GitVersion != testcluster.KubernetesVersion {
			t.Errorf("server version %q, want %q", v.ServerVersion.GitVersion, testcluster.KubernetesVersion)
		}
		// Short names and the printer columns come from KubeVirt's CRDs.
		out, err = exec.CommandContext(t.Context(), kubectl, "--kubeconfig", c.Kubeconfig, "get", "vms", "-A").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get vms: %v\n%s", err, out)
		}

	})

	t.Run("AddNodes adds Ready, untainted nodes", func(t *testing.T) {
		added, err := c.AddNodes(t.Context(), len(c.Nodes), 2)
		t.Cleanup(func() {
			for _, name := range added {
				_ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{testcluster.NodeName(3), testcluster.NodeName(4)}; strings.Join(added, " ") != strings.Join(want, " ") {
			t.Fatalf("added %v, want %v", added, want)
		}
		for _, name := range added {
			n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !testcluster.NodeReady(n) || len(n.Spec.Taints) != 0 {
				t.Errorf("node %s: Ready %v, taints %v", name, testcluster.NodeReady(n), n.Spec.Taints)
			}
		}
		if len(c.Nodes) != 3 {
			t.Errorf("Cluster.Nodes changed to %v", c.Nodes)
		}
	})

	t.Run("RestartEtcdCompacted ends watches with 410 Gone", func(t *testing.T) {
		ctx := t.Context()
		ns := testcluster.Namespace(t, cs, nil)
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RestartEtcdCompacted(ctx); err != nil {
			t.Fatal(err)
		}
		// The API server finds etcd again by itself; its watch cache lists
		// again, and until then a watch is refused (429) or served.
		var last error
		testcluster.Eventually(t, 60*time.Second, "a watch from before the compaction to get 410 Gone", func(ctx context.Context) (bool, error) {
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
			if err != nil {
				last = err
				return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), nil
			}
			defer w.Stop()
			select {
			case ev := <-w.ResultChan():
				last = apierrors.FromObject(ev.Object)
				return apierrors.IsResourceExpired(last) || apierrors.IsGone(last), nil
			case <-time.After(2 * time.Second):
				last = errors.New("the watch stayed open")
				return false, nil
			}
		})
		t.Logf("last answer: %v", last)
	})

	// Found by the chaos soak: two compactions in a row, with nothing written
	// between, made etcd answer "required revision has been compacted".
	t.Run("compacting etcd twice with nothing written between is no error", func(t *testing.T) {
		var revs [2]int64
		err := c.RestartAPIServer(t.Context(), syscall.SIGTERM, 0, func() error {
			// Only the API server writes to etcd: while it is down nothing does.
			for i := range revs {
				rev, err := c.CompactEtcd(t.Context())
				if err != nil {
					return fmt.Errorf("compaction %d: %w", i+1, err)
				}
				revs[i] = rev
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if revs[0] != revs[1] {
			t.Errorf("compacted to revisions %v with the API server down, want the same one twice", revs)
		}
	})

	// Found by the chaos soak: kube-scheduler exits when it finds its cache
	// corrupted, and a kubelet would start it again.
	t.Run("kube-scheduler is started again when it exits on its own", func(t *testing.T) {
		pid := c.Pid(testcluster.KubeScheduler)
		if pid == 0 {
			t.Fatal("kube-scheduler is not running")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "a new kube-scheduler", func(context.Context) (bool, error) {
			now := c.Pid(testcluster.KubeScheduler)
			return now != 0 && now != pid, fmt.Errorf("kube-scheduler pid %d (was %d)", now, pid)
		})
		ns := testcluster.Namespace(t, cs, nil)
		pod, err := cs.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "after-restart"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "the new kube-scheduler to bind a Pod", func(ctx context.Context) (bool, error) {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && got.Spec.NodeName != "", err
		})
	})

	t.Run("Stop ends every process and removes the directory", func(t *testing.T) {
		pids := c.Pids()
		if len(pids) != 5 {
			t.Fatalf("got %d running components %v, want 5", len(pids), pids)
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
			}
		}
		if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
			t.Errorf("cluster directory %s still exists: %v", c.Dir, err)
		}
	})
}

func runningPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, sel map[string]string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		t.Fatal(err)
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	return running
}
