package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// reinitializing is an API server whose watch cache is filling: it answers
// every request as kube-apiserver does then, 429 with Retry-After: 1.
func reinitializing(t *testing.T) (kubevirt.Interface, *atomic.Int32) {
	requests := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"storage is (re)initializing","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`))
	}))
	t.Cleanup(srv.Close)
	cs, err := kubevirt.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs, requests
}

// TestListAndWatchLeaveRetriesToTheReflector: each list and watch the agent's
// reflectors make is one request, its 429 theirs to retry with backoff.
func TestListAndWatchLeaveRetriesToTheReflector(t *testing.T) {
	t.Parallel()
	for name, call := range map[string]func(context.Context, kubevirtVMs) error{
		"list VM": func(ctx context.Context, c kubevirtVMs) error {
			_, err := c.list(ctx, testNamespace, kube.ByName(testVM), metav1.ListOptions{})
			return err
		},
		"watch VM": func(ctx context.Context, c kubevirtVMs) error {
			_, err := c.watch(ctx, testNamespace, kube.ByName(testVM), metav1.ListOptions{})
			return err
		},
		"list VMI": func(ctx context.Context, c kubevirtVMs) error {
			_, err := c.listVMI(ctx, testNamespace, testVM, metav1.ListOptions{})
			return err
		},
		"watch VMI": func(ctx context.Context, c kubevirtVMs) error {
			_, err := c.watchVMI(ctx, testNamespace, testVM, metav1.ListOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs, requests := reinitializing(t)
			start := time.Now()
			err := call(t.Context(), kubevirtVMs{cs})
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("got %v, want the 429", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1: the reflector retries, not client-go", n)
			}
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Errorf("returned after %v: it waited out Retry-After", took)
			}
		})
	}
}

// TestClientGoObeysRetryAfter checks the premise of listWatch: the typed
// client retries a 429 by itself, once a second.
func TestClientGoObeysRetryAfter(t *testing.T) {
	t.Parallel()
	cs, requests := reinitializing(t)
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, _ = cs.KubevirtV1().VirtualMachines(testNamespace).Watch(ctx, metav1.ListOptions{FieldSelector: kube.ByName(testVM).Field})
	if n := requests.Load(); n < 2 {
		t.Errorf("client-go made %d requests in 1.5 s, want 2 (it retries after Retry-After: 1)", n)
	}
}
