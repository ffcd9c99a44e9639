// Command fakeagent stands in for `kubectl-vmctl agent` in the kubelet
// double's tests. It reports who it is, serves /readyz and exits on SIGTERM.
//
//   - It logs its arguments, the downward-API environment and the identity
//     its kubeconfig authenticates as (a SelfSubjectReview).
//   - /readyz answers 200 once that review succeeded, unless a file named
//     "unready" exists in the working directory.
//   - On SIGTERM it logs "got SIGTERM" and exits, with --hold-on-term only once
//     a file named "release" exists in the working directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Println("fakeagent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "agent" {
		return fmt.Errorf("want `agent` first, got %q", args)
	}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	hostname := fs.String("hostname-override", "", "")
	kubeconfig := fs.String("kubeconfig", "", "")
	probeAddr := fs.String("probe-address", "", "")
	hold := fs.Bool("hold-on-term", false, "")
	// Positional arguments come first, as in the agent's usage.
	var positional []string
	rest := args[1:]
	for len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		positional, rest = append(positional, rest[0]), rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	fmt.Printf("fakeagent: args %q positional %q hostname %s\n", args, positional, *hostname)
	for _, name := range []string{"POD_NAME", "POD_NAMESPACE", "POD_UID", "NODE_NAME", "GREETING", "KUBECONFIG"} {
		fmt.Printf("fakeagent: env %s=%s\n", name, os.Getenv(name))
	}

	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)

	var reviewed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat("unready"); err == nil || !reviewed.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Addr: *probeAddr, Handler: mux, ReadHeaderTimeout: time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("fakeagent: serve probes:", err)
			os.Exit(1)
		}
	}()

	if err := whoami(*kubeconfig); err != nil {
		return err
	}
	reviewed.Store(true)

	<-terms
	fmt.Println("fakeagent: got SIGTERM")
	for *hold {
		if _, err := os.Stat("release"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("fakeagent: exiting")
	return nil
}

// whoami logs the user the kubeconfig authenticates as, with its extras.
func whoami(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("self subject review: %w", err)
	}
	user := review.Status.UserInfo
	fmt.Printf("fakeagent: whoami %s\n", user.Username)
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("fakeagent: extra %s=%v\n", k, user.Extra[k])
	}
	return nil
}
