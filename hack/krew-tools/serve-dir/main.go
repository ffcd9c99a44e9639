// Command serve-dir serves a directory on a loopback port, so krew can
// "download" the snapshot archives when the release check installs the
// rendered manifest for every platform. It writes its base URL to -url-file
// once listening and stops on SIGTERM or after -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	dir := flag.String("dir", "dist", "directory to serve")
	urlFile := flag.String("url-file", "", "file to write the base URL (http://127.0.0.1:PORT/) to (required)")
	timeout := flag.Duration("timeout", 10*time.Minute, "stop after this long")
	flag.Parse()
	if err := run(*dir, *urlFile, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "serve-dir: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, urlFile string, timeout time.Duration) error {
	if urlFile == "" {
		return errors.New("-url-file is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	url := fmt.Sprintf("http://%s/", l.Addr())
	// Written after Listen, so a reader that sees the file can connect.
	if err := os.WriteFile(urlFile+".tmp", []byte(url), 0o644); err != nil {
		return err
	}
	if err := os.Rename(urlFile+".tmp", urlFile); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
