package testcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Namespace creates a namespace named after t, waits for its default
// ServiceAccount (Pods need it, and kube-controller-manager makes it a moment
// later), and deletes it when t ends. If t failed, onFailure (if not nil) runs
// first with the namespace's name: to log what the test's Pods said.
func Namespace(t testing.TB, cs kubernetes.Interface, onFailure func(ns string)) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() && onFailure != nil {
			onFailure(ns.Name)
		}
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	Eventually(t, 30*time.Second, "the default ServiceAccount in "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return ns.Name
}

// Eventually polls cond every 100ms until it holds or timeout passes, then
// fails t with the last error cond gave. An error from cond means "not yet",
// with what it saw.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// WaitGone waits up to a minute until get reports NotFound.
func WaitGone(t testing.TB, what string, get func(ctx context.Context) error) {
	t.Helper()
	Eventually(t, time.Minute, what+" to go", func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			err = errors.New("still there")
		}
		return false, err
	})
}
