package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index makes one multi-platform index (a Docker manifest list, matching the
// images' Docker media types) of images, each entry carrying its image's
// platform so runtimes pick theirs.
func Index(imgs []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	seen := map[string]bool{}
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := cf.Platform()
		if p == nil || p.OS == "" || p.Architecture == "" {
			return nil, errors.New("an image has no platform in its config")
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for %s", p.String())
		}
		seen[p.String()] = true
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx, nil
}

func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the registry (a loopback rehearsal registry)")
	var tags listFlag
	fs.Var(&tags, "tag", "a full name to push the index as, e.g. ghcr.io/kubectl-vmctl/kubectl-vmctl:v1.2.3 (required, repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(tags) == 0 || fs.NArg() == 0 {
		return errors.New("needs at least one -tag and one tarball per platform; see image push -h")
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	var refs []name.Tag
	for _, t := range tags {
		ref, err := name.NewTag(t, append(opts, name.StrictValidation)...)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		refs = append(refs, ref)
	}
	var imgs []v1.Image
	for _, file := range fs.Args() {
		img, err := tarball.ImageFromPath(file, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Credentials as docker and crane find them (~/.docker/config.json,
	// credential helpers), e.g. written by `docker login` in the release job.
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(refs[0], idx, ropts...); err != nil {
		return fmt.Errorf("push %s: %w", refs[0], err)
	}
	for _, ref := range refs[1:] {
		if err := remote.Tag(ref, idx, ropts...); err != nil {
			return fmt.Errorf("tag %s: %w", ref, err)
		}
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	for _, ref := range refs {
		fmt.Printf("pushed %s@%s\n", ref, digest)
	}
	return nil
}
