package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// runRegistry serves go-containerregistry's in-memory registry on loopback,
// so a release rehearsal pushes and pulls for real without leaving the machine.
func runRegistry(args []string) error {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	urlFile := fs.String("url-file", "", "write host:port here once serving (required)")
	timeout := fs.Duration("timeout", 10*time.Minute, "stop after this long, in case the caller dies without stopping it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *urlFile == "" {
		return errors.New("needs -url-file")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*urlFile, []byte(ln.Addr().String()), 0o644); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(os.Stderr, "registry: ", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	time.AfterFunc(*timeout, func() { _ = srv.Close() })
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
