// Command virtlauncher is the real node's stand-in for the programs of
// KubeVirt's virt-launcher image that a launcher Pod runs (package node builds
// it into the image named LauncherImage, the way `make image` builds the agent
// image). KubeVirt's real virt-controller (package kubevirt, given
// LauncherImage as its --launcher-image) makes the launcher Pod; the real
// kubelet runs it unchanged: its securityContext, volumes and resources as
// KubeVirt wrote them. Only the programs are stand-ins. It is one multi-call
// binary that tells what to be by the name it runs as, at the paths where the
// launcher Pod's containers run them:
//
//   - /usr/bin/cp [--preserve=all] SOURCE TARGET (the init container
//     "container-disk-binary") copies SOURCE to TARGET, as coreutils' cp
//     does: the launcher image's /usr/bin/container-disk into the Pod's
//     shared bin volume. KubeVirt v1.8 passes --preserve=all, v1.7 nothing;
//     with it, TARGET keeps SOURCE's modification time too.
//   - /usr/bin/container-disk (each containerDisk volume's init container
//     and container, run from that volume, so from this binary) does what
//     KubeVirt's container-disk (cmd/container-disk-v2alpha) does: --no-op
//     exits 0; --copy-path PATH creates PATH's directory if needed and
//     listens on the unix socket PATH.sock, where virt-handler would find the
//     container, until SIGTERM, then removes it and exits 0.
//   - /usr/bin/virt-launcher-monitor (the "compute" container) and
//     /usr/bin/virt-tail (the "guest-console-log" sidecar) stay up until
//     SIGTERM and exit 0.
//
// The long-running ones say on stderr (kubectl logs) what they are.
//
// What it leaves out: everything a guest needs. No virt-launcher, libvirt or
// QEMU runs, no domain is defined, no disk is read, virt-tail follows no
// serial console log, and nothing answers on the socket. Without virt-handler
// (see package doubles' virt-handler stand-in), nothing would use them.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	name := filepath.Base(os.Args[0])
	if err := run(name, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s (vmctl's virt-launcher stand-in): %v\n", name, err)
		os.Exit(1)
	}
}

func run(name string, args []string) error {
	// At once: the kubelet may stop a container as soon as it starts it, and
	// a container's first process ignores SIGTERM without a handler.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	wait := func() {
		fmt.Fprintf(os.Stderr, "%s (vmctl's virt-launcher stand-in): no guest runs here; waiting for SIGTERM\n", name)
		<-sigs
	}
	switch name {
	case "cp":
		preserve := len(args) == 3 && args[0] == "--preserve=all"
		if preserve {
			args = args[1:]
		}
		if len(args) != 2 {
			return fmt.Errorf("want [--preserve=all] SOURCE TARGET, got %q", args)
		}
		return copyFile(args[0], args[1], preserve)
	case "container-disk":
		switch {
		case len(args) == 1 && args[0] == "--no-op":
			return nil
		case len(args) == 2 && args[0] == "--copy-path":
			return serveSocket(args[1]+".sock", wait)
		}
		return fmt.Errorf("want --no-op or --copy-path PATH, got %q", args)
	case "virt-launcher-monitor", "virt-tail":
		wait()
		return nil
	}
	return fmt.Errorf("not a program this stand-in plays (cp, container-disk, virt-launcher-monitor, virt-tail)")
}

// copyFile copies source's content to target, executable as the source is,
// and with preserve as old as the source. Ownership it leaves alone: the
// launcher's init container runs as non-root, where coreutils' cp keeps the
// copier's too.
func copyFile(source, target string, preserve bool) error {
	in, err := os.Open(source)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if preserve {
		return os.Chtimes(target, info.ModTime(), info.ModTime())
	}
	return nil
}

// serveSocket listens on the unix socket path until wait returns; closing
// the listener removes the socket.
func serveSocket(path string, wait func()) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	wait()
	return l.Close()
}
