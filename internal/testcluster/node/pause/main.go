// Command pause is the real node's sandbox image (package node builds it into
// an image the way `make image` builds the agent's): the first process of
// every Pod, holding the Pod's namespaces until the runtime stops it, as
// registry.k8s.io/pause does. It reaps orphans, as a shared PID namespace's
// init must, and exits 0 on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
