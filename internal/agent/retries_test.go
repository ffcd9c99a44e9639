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
)

// reinitializing is an API server whose watch cache is not in: it answers
// every request as kube-apiserver does then, 429 with Retry-After: 1.
func reinitializing(t *testing.T) (url string, requests *atomic.Int32) {
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"storage is (re)initializing","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

func TestPaceRetriesLeavesRetriesToTheAgent(t *testing.T) {
	t.Parallel()
	url, requests := reinitializing(t)
	cfg := &rest.Config{Host: url}
	cfg.Wrap(PaceRetries)
	cs, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = cs.KubevirtV1().VirtualMachines(testNamespace).Watch(t.Context(), byName(metav1.ListOptions{}, testVM))
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("watch: got %v, want the 429", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the watch made %d requests, want 1: the agent's backoff retries it, not client-go", n)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the watch returned after %v: it waited out Retry-After", took)
	}
}

// TestClientGoObeysRetryAfter checks the premise of PaceRetries: without it
// client-go retries a 429 by itself, once a second.
func TestClientGoObeysRetryAfter(t *testing.T) {
	t.Parallel()
	url, requests := reinitializing(t)
	cs, err := kubevirt.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, _ = cs.KubevirtV1().VirtualMachines(testNamespace).Watch(ctx, byName(metav1.ListOptions{}, testVM))
	if n := requests.Load(); n < 2 {
		t.Errorf("client-go made %d requests in 1.5 s, want 2 (it retries after Retry-After: 1)", n)
	}
}
