package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KubernetesVersion is the version the control-plane binaries report; it
// matches the k8s.io/kubernetes version pinned in the tools module.
const KubernetesVersion = "v1.36.3"

// Binaries locates the control-plane commands and kwok's Stage files that
// EnsureBinaries built and copied, and the real node's kubelet and kube-proxy
// (package node runs them), built from the same Kubernetes module.
type Binaries struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	Kubelet               string
	KubeProxy             string
	// NodeStages and PodStages are the kwok Stage YAML files that ship in the
	// kwok module (kustomize/stage/node/... and kustomize/stage/pod/general).
	NodeStages []string
	PodStages  []string
}

// component is one command built from the tools module.
type component struct {
	name string // binary name
	pkg  string // Go package path
	dest func(*Binaries) *string
}

func components() []component {
	return []component{
		{"etcd", "go.etcd.io/etcd/server/v3", func(b *Binaries) *string { return &b.Etcd }},
		{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", func(b *Binaries) *string { return &b.KubeAPIServer }},
		{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", func(b *Binaries) *string { return &b.KubeControllerManager }},
		{"kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", func(b *Binaries) *string { return &b.KubeScheduler }},
		{"kwok", "sigs.k8s.io/kwok/cmd/kwok", func(b *Binaries) *string { return &b.Kwok }},
		{"kubelet", "k8s.io/kubernetes/cmd/kubelet", func(b *Binaries) *string { return &b.Kubelet }},
		{"kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", func(b *Binaries) *string { return &b.KubeProxy }},
	}
}

// Stage files kwok ships, relative to the kwok module. node-initialize makes a
// node Ready at once; heartbeat-with-lease keeps it Ready and renews its Lease.
func kwokNodeStages() []string {
	return []string{
		"kustomize/stage/node/fast/node-initialize.yaml",
		"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	}
}

func kwokPodStages() []string {
	return []string{
		"kustomize/stage/pod/general/pod-create.yaml",
		"kustomize/stage/pod/general/pod-init-container-running.yaml",
		"kustomize/stage/pod/general/pod-init-container-completed.yaml",
		"kustomize/stage/pod/general/pod-ready.yaml",
		"kustomize/stage/pod/general/pod-complete.yaml",
		"kustomize/stage/pod/general/pod-delete.yaml",
	}
}

// ldflags stamps the Kubernetes version so `kubectl version` reads right.
func ldflags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return strings.Join([]string{
		"-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion,
		"-X k8s.io/component-base/version.gitMajor=" + major,
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
	}, " ")
}

// EnsureBinaries builds the control plane from the tools module into
// cacheDir/<hash>/bin (see CachedBuild), so it rebuilds only when the tools
// module or the link flags change. cacheDir "" means <repo>/.cache/testcluster.
// Progress goes to progress (nil discards it).
func EnsureBinaries(ctx context.Context, cacheDir string, progress io.Writer) (Binaries, error) {
	if progress == nil {
		progress = io.Discard
	}
	root, err := RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "testcluster")
	}
	key := "ldflags " + ldflags()
	for _, c := range components() {
		key += "\ncomponent " + c.name + " " + c.pkg
	}
	dir, err := CachedBuild(ctx, cacheDir, toolsDir, key, "control plane", progress, func(dir string) error {
		return build(ctx, toolsDir, dir, progress)
	})
	if err != nil {
		return Binaries{}, err
	}
	b, ok := cachedBinaries(dir)
	if !ok {
		return Binaries{}, fmt.Errorf("control plane built into %s but incomplete; remove that directory and retry", dir)
	}
	return b, nil
}

func cachedBinaries(dir string) (Binaries, bool) {
	var b Binaries
	for _, c := range components() {
		p := filepath.Join(dir, "bin", c.name)
		if _, err := os.Stat(p); err != nil {
			return Binaries{}, false
		}
		*c.dest(&b) = p
	}
	for _, s := range kwokNodeStages() {
		b.NodeStages = append(b.NodeStages, filepath.Join(dir, "stages", filepath.Base(s)))
	}
	for _, s := range kwokPodStages() {
		b.PodStages = append(b.PodStages, filepath.Join(dir, "stages", filepath.Base(s)))
	}
	return b, true
}

func build(ctx context.Context, toolsDir, dir string, progress io.Writer) error {
	_, _ = fmt.Fprintf(progress, "building control plane %s (about 8-13 minutes on 2 cores with a cold cache) into %s...\n", KubernetesVersion, dir)
	for _, sub := range []string{"bin", "stages"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create the build directory: %w", err)
		}
	}
	for _, c := range components() {
		t := time.Now()
		if err := GoBuild(ctx, toolsDir, filepath.Join(dir, "bin", c.name), c.pkg, nil, "-ldflags", ldflags()); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(progress, "  built %-24s %s\n", c.name, time.Since(t).Round(time.Second))
	}

	kwokDir, err := moduleDir(ctx, toolsDir, "sigs.k8s.io/kwok")
	if err != nil {
		return err
	}
	for _, s := range append(kwokNodeStages(), kwokPodStages()...) {
		data, err := os.ReadFile(filepath.Join(kwokDir, s))
		if err != nil {
			return fmt.Errorf("read kwok's stage %s: %w", s, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stages", filepath.Base(s)), data, 0o644); err != nil {
			return fmt.Errorf("copy kwok's stage: %w", err)
		}
	}
	return nil
}

// moduleDir returns where the Go module cache holds module, as the tools module
// resolves it.
func moduleDir(ctx context.Context, toolsDir, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = toolsDir
	cmd.Env = toolsEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate %s in the module cache: %w: %s", module, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("locate " + module + ": not downloaded; run `go mod download` in " + toolsDir)
	}
	return dir, nil
}
