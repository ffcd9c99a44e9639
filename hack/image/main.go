// Command image builds, checks and publishes container images without Docker
// or a registry. Most are made of one static binary: an empty base plus one
// layer holding the binary, with the binary as entrypoint and a non-root user.
// `make image` and goreleaser build the kubectl-vmctl agent image with it, the
// release pushes it, and the test harness builds its own images the same way:
// the node's pause image, and its stand-ins for KubeVirt's launcher image (one
// multi-call binary under several names, -link) and containerDisk image (a
// data file only, -file), the kernel-boot image of its guest (-file, the
// files owned by KubeVirt's qemu user with -file-owner), and KubeVirt's
// virt-launcher and virt-handler images, both of one Debian root file system
// (-rootfs, one layer of a whole directory tree, which the images share).
//
//	image build -binary dist/linux_amd64/vmctl-agent -platform linux/amd64 \
//	    -tag ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3 -out agent.tar
//	image build -rootfs DIR -platform linux/amd64 \
//	    -image quay.io/kubevirt/virt-handler:v1.7.0=/usr/bin/virt-handler -out handler.tar
//	image check -platform linux/amd64 -tag ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3 agent.tar
//	image push -tag ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3 amd64.tar arm64.tar
//	image registry -url-file url   # a registry on loopback, for rehearsals
package main

import (
	"fmt"
	"os"
)

const usage = `usage: image build|check|push|registry [flags]
  build     write a one-binary image, or with -rootfs images of a directory tree, as a tarball (docker load, ctr images import, kind load image-archive)
  check     verify a tarball written by build: platform, tag, entrypoint, user, one layer with a static binary
  push      push tarballs of several platforms as one multi-platform index under each -tag
  registry  serve an in-memory registry on loopback until killed (for release rehearsals)
Run "image COMMAND -h" for a command's flags.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"build":    runBuild,
		"check":    runCheck,
		"push":     runPush,
		"registry": runRegistry,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "image: unknown command %q\n%s\n", os.Args[1], usage)
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "image %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return fmt.Sprint(*l) }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
