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
	"slices"
	"strings"
)

// KubernetesVersion is the version the control-plane binaries report; it
// matches the k8s.io/kubernetes version pinned in the tools module.
const KubernetesVersion = "v1.36.3"

// Binaries locates the control-plane commands and kwok's Stage files that
// EnsureBinaries built and copied.
type Binaries struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	// NodeStages and PodStages are the kwok Stage YAML files that ship in the
	// kwok module (kustomize/stage/node/... and kustomize/stage/pod/general).
	NodeStages []string
	PodStages  []string
	// Usage are kwok's files that make it serve each node's resource
	// metrics from the Pods' annotations (kustomize/metrics/...): what
	// metrics-server scrapes (see kwokConfig).
	Usage []string
}

// components are what a cluster runs: what EnsureBinaries builds.
func components() []Command {
	return []Command{
		{Etcd, "go.etcd.io/etcd/server/v3"},
		{KubeAPIServer, "k8s.io/kubernetes/cmd/kube-apiserver"},
		{KubeControllerManager, "k8s.io/kubernetes/cmd/kube-controller-manager"},
		{KubeScheduler, "k8s.io/kubernetes/cmd/kube-scheduler"},
		{Kwok, "sigs.k8s.io/kwok/cmd/kwok"},
	}
}

func (b *Binaries) set(name, path string) {
	switch name {
	case Etcd:
		b.Etcd = path
	case KubeAPIServer:
		b.KubeAPIServer = path
	case KubeControllerManager:
		b.KubeControllerManager = path
	case KubeScheduler:
		b.KubeScheduler = path
	case Kwok:
		b.Kwok = path
	}
}

// What the first builds take on a 2-core machine with empty Go caches,
// downloading the modules included; the progress lines say it. The control
// plane's build took 6m52s on a quiet 2-core machine from empty caches,
// and 5m28s where `make demo` had downloaded its modules meanwhile, after
// kubectl-vmctl's build, whose compiled Kubernetes libraries it reuses
// (TestToolsModuleSharesVersionsWithTheProduct); `make demo` builds it beside
// KubeVirt, in 8m41s. The kubelet and kube-proxy add 95 CPU-seconds to it.
const (
	controlPlaneEstimate = "5-9 minutes on 2 cores with empty Go caches"
	nodeEstimate         = "about a minute on 2 cores after the control plane"
)

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

// kwokUsage are the Metric that serves a kubelet's /metrics/resource for
// each node at /metrics/nodes/<node>/metrics/resource, and the
// ClusterResourceUsage that gives every container of a Pod the CPU and
// memory of its kwok.x-k8s.io/usage-cpu and usage-memory annotations.
func kwokUsage() []string {
	return []string{
		"kustomize/metrics/resource/metrics-resource.yaml",
		"kustomize/metrics/usage/usage-from-annotation.yaml",
	}
}

// kwokFiles are the files of kwok's module the build copies into stages/.
func kwokFiles() []string {
	return slices.Concat(kwokNodeStages(), kwokPodStages(), kwokUsage())
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
		key += "\ncomponent " + c.Name + " " + c.Pkg
	}
	// A build copied only the files named then; one more file needs a new build.
	for _, f := range kwokFiles() {
		key += "\nkwok " + f
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
		p := filepath.Join(dir, "bin", c.Name)
		if _, err := os.Stat(p); err != nil {
			return Binaries{}, false
		}
		b.set(c.Name, p)
	}
	for _, s := range kwokNodeStages() {
		b.NodeStages = append(b.NodeStages, filepath.Join(dir, "stages", filepath.Base(s)))
	}
	for _, s := range kwokPodStages() {
		b.PodStages = append(b.PodStages, filepath.Join(dir, "stages", filepath.Base(s)))
	}
	for _, s := range kwokUsage() {
		b.Usage = append(b.Usage, filepath.Join(dir, "stages", filepath.Base(s)))
	}
	return b, true
}

func build(ctx context.Context, toolsDir, dir string, progress io.Writer) error {
	_, _ = fmt.Fprintf(progress, "building the control plane %s: %s (%s) into %s...\n",
		KubernetesVersion, strings.Join(names(components()), ", "), controlPlaneEstimate, dir)
	if err := BuildCommands(ctx, toolsDir, filepath.Join(dir, "bin"), components(), ldflags()); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "stages"), 0o755); err != nil {
		return fmt.Errorf("create the build directory: %w", err)
	}
	kwokDir, err := moduleDir(ctx, toolsDir, "sigs.k8s.io/kwok")
	if err != nil {
		return err
	}
	for _, s := range kwokFiles() {
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

// NodeBinaries locates the real node's kubelet and kube-proxy (package node
// runs them), built by EnsureNodeBinaries from the control plane's Kubernetes.
type NodeBinaries struct {
	Kubelet   string
	KubeProxy string
}

// nodeComponents are the commands only a real node runs; a cluster of fake
// nodes (the demo, most e2e tests) never builds them.
func nodeComponents() []Command {
	return []Command{
		{"kubelet", "k8s.io/kubernetes/cmd/kubelet"},
		{"kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy"},
	}
}

// EnsureNodeBinaries builds the real node's kubelet and kube-proxy from the
// tools module, as EnsureBinaries builds the control plane (same flags, so
// the packages they share compile once), into cacheDir/kubelet/<hash>.
// cacheDir "" means <repo>/.cache/testcluster.
func EnsureNodeBinaries(ctx context.Context, cacheDir string, progress io.Writer) (NodeBinaries, error) {
	root, err := RepoRoot()
	if err != nil {
		return NodeBinaries{}, err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "testcluster")
	}
	key := "ldflags " + ldflags()
	for _, c := range nodeComponents() {
		key += "\ncomponent " + c.Name + " " + c.Pkg
	}
	dir, err := CachedBuild(ctx, filepath.Join(cacheDir, "kubelet"), toolsDir, key, "kubelet and kube-proxy", progress, func(dir string) error {
		if progress != nil {
			_, _ = fmt.Fprintf(progress, "building the real node's kubelet and kube-proxy %s (%s) into %s...\n", KubernetesVersion, nodeEstimate, dir)
		}
		return BuildCommands(ctx, toolsDir, filepath.Join(dir, "bin"), nodeComponents(), ldflags())
	})
	if err != nil {
		return NodeBinaries{}, err
	}
	b := NodeBinaries{Kubelet: filepath.Join(dir, "bin", "kubelet"), KubeProxy: filepath.Join(dir, "bin", "kube-proxy")}
	for _, f := range []string{b.Kubelet, b.KubeProxy} {
		if _, err := os.Stat(f); err != nil {
			return NodeBinaries{}, fmt.Errorf("kubelet and kube-proxy built into %s but incomplete (%w); remove that directory and retry", dir, err)
		}
	}
	return b, nil
}
