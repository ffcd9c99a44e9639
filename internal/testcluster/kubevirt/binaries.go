package kubevirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Release is a KubeVirt release the harness builds: kubevirt.io/kubevirt
// as one go.mod of the tools module (internal/testcluster/kubevirt/tools)
// pins it, which is the one place its version is written.
type Release struct {
	// ModFile is that go.mod, relative to the tools module; go.sum's
	// counterpart sits beside it.
	ModFile string
	// Tags select the manifest generator's files for the release: KubeVirt's
	// functions change signatures between releases.
	Tags string
	// Cgo builds virt-api and virt-controller with cgo, as EnsureNodeSide
	// builds the node side: with the same flags, the node side's build takes
	// the packages they share (most of them) from Go's build cache instead of
	// compiling KubeVirt's dependencies again.
	Cgo bool
}

var (
	// Newest is the release `make demo` and the e2e suite run.
	Newest = Release{ModFile: "go.mod"}
	// Previous is the release before it: the tests that check vmctl against
	// KubeVirt's own rules run on it too. Without cgo, as Newest, so that
	// the many packages the two releases share come from Go's build cache.
	Previous = Release{ModFile: "kubevirt-v1.8.0.mod", Tags: "kubevirt_v1_8"}
	// Oldest is the oldest release users run that the harness builds: the
	// tests that check vmctl against KubeVirt's own rules run on it too, and
	// the real node runs its node side (NodeRelease).
	Oldest = Release{ModFile: "kubevirt-v1.7.0.mod", Tags: "kubevirt_v1_7", Cgo: true}
)

// Releases are the releases the harness builds, newest first.
var Releases = []Release{Newest, Previous, Oldest}

// ReleaseOf is the release of version, such as v1.7.0: for a run that
// picks its KubeVirt (VMCTL_KUBEVIRT).
func ReleaseOf(version string) (Release, error) {
	var have []string
	for _, r := range Releases {
		v, err := r.Version()
		if err != nil {
			return Release{}, err
		}
		if v == version {
			return r, nil
		}
		have = append(have, v)
	}
	return Release{}, fmt.Errorf("the harness builds no KubeVirt %s: pick one of %s", version, strings.Join(have, ", "))
}

// Version reads the KubeVirt version r's go.mod requires.
func (r Release) Version() (string, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(root, toolsModuleRel, r.ModFile)).Output()
	if err != nil {
		return "", fmt.Errorf("read the KubeVirt tools module's %s: %w%s", r.ModFile, err, stderrOf(err))
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod edit -json %s: %w", r.ModFile, err)
	}
	for _, req := range mod.Require {
		if req.Path == "kubevirt.io/kubevirt" {
			return req.Version, nil
		}
	}
	return "", fmt.Errorf("%s/%s requires no kubevirt.io/kubevirt", toolsModuleRel, r.ModFile)
}

// sumFile is the go.sum that goes with r's go.mod, as go's -modfile reads it.
func (r Release) sumFile() string { return strings.TrimSuffix(r.ModFile, ".mod") + ".sum" }

// toolsModuleRel is the tools module's directory relative to the repository root.
const toolsModuleRel = "internal/testcluster/kubevirt/tools"

// Binaries locates KubeVirt's commands and the manifests that KubeVirt's own
// functions generated (see the tools module's kubevirt-manifests).
type Binaries struct {
	// Version is the KubeVirt release built, such as v1.8.0.
	Version        string
	VirtAPI        string
	VirtController string
	// CRDs holds every KubeVirt CRD, as virt-operator installs them; pass it
	// to testcluster.Options.CRDs.
	CRDs string
	// RBAC holds the ServiceAccounts, roles and bindings of virt-api,
	// virt-controller and virt-handler in namespace kubevirt.
	RBAC string
	// Webhooks holds virt-api's ValidatingWebhookConfiguration and
	// MutatingWebhookConfiguration, pointing at virt-api's Service.
	Webhooks string
	// APIServices holds the APIServices of virt-api's subresource API
	// (subresources.kubevirt.io), pointing at virt-api's Service.
	APIServices string
	// Handler holds virt-handler's DaemonSet, as virt-operator makes it.
	Handler string
}

// LauncherImage is KubeVirt's virt-launcher image of b's version.
func (b Binaries) LauncherImage() string { return "quay.io/kubevirt/virt-launcher:" + b.Version }

// generatorPkg is the tools module's manifest generator, relative to it.
const generatorPkg = "cmd/kubevirt-manifests"

// manifestSets are kubevirt-manifests' arguments, each printed to <set>.yaml.
var manifestSets = []string{"crds", "rbac", "webhooks", "apiservices", "handler"}

func binariesIn(dir, version string) Binaries {
	return Binaries{
		Version:        version,
		VirtAPI:        filepath.Join(dir, "bin", "virt-api"),
		VirtController: filepath.Join(dir, "bin", "virt-controller"),
		CRDs:           filepath.Join(dir, "manifests", "crds.yaml"),
		RBAC:           filepath.Join(dir, "manifests", "rbac.yaml"),
		Webhooks:       filepath.Join(dir, "manifests", "webhooks.yaml"),
		APIServices:    filepath.Join(dir, "manifests", "apiservices.yaml"),
		Handler:        filepath.Join(dir, "manifests", "handler.yaml"),
	}
}

// EnsureBinaries is EnsureRelease of Newest.
func EnsureBinaries(ctx context.Context, cacheDir string, progress io.Writer) (Binaries, error) {
	return EnsureRelease(ctx, Newest, cacheDir, progress)
}

// EnsureRelease builds r's virt-api and virt-controller from the tools module
// and writes KubeVirt's manifests, once, into cacheDir/<version>/<hash> (see
// testcluster.CachedBuild, keyed also by r's go.mod and go.sum and the
// generator's source). cacheDir "" means <repo>/.cache/kubevirt. Progress
// goes to progress (nil discards it).
func EnsureRelease(ctx context.Context, r Release, cacheDir string, progress io.Writer) (Binaries, error) {
	if progress == nil {
		progress = io.Discard
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	version, err := r.Version()
	if err != nil {
		return Binaries{}, err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "kubevirt")
	}
	key, err := buildKey(toolsDir, r)
	if err != nil {
		return Binaries{}, err
	}
	// Each release has a directory of its own: a build prunes the older
	// builds beside it.
	dir, err := testcluster.CachedBuild(ctx, filepath.Join(cacheDir, version), toolsDir, key, "KubeVirt "+version, progress, func(dir string) error {
		return build(ctx, toolsDir, dir, r, version, progress)
	})
	if err != nil {
		return Binaries{}, err
	}
	b := binariesIn(dir, version)
	for _, f := range []string{b.VirtAPI, b.VirtController, b.CRDs, b.RBAC, b.Webhooks, b.APIServices, b.Handler} {
		if _, err := os.Stat(f); err != nil {
			return Binaries{}, fmt.Errorf("KubeVirt built into %s but incomplete (%w); remove that directory and retry", dir, err)
		}
	}
	return b, nil
}

// buildKey is what shapes r's build besides the module's go.mod and go.sum:
// r's own go.mod and go.sum, its tags, cgo, and the generator's source.
func buildKey(toolsDir string, r Release) (string, error) {
	var key strings.Builder
	fmt.Fprintf(&key, "tags=%s cgo=%t\n", r.Tags, r.Cgo)
	files := []string{r.ModFile, r.sumFile()}
	gen, _ := filepath.Glob(filepath.Join(toolsDir, generatorPkg, "*.go")) // the pattern is well formed
	if len(gen) == 0 {
		return "", fmt.Errorf("no manifest generator in %s", filepath.Join(toolsDir, generatorPkg))
	}
	for _, f := range gen {
		files = append(files, strings.TrimPrefix(f, toolsDir+string(filepath.Separator)))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(toolsDir, f))
		if err != nil {
			return "", fmt.Errorf("read the KubeVirt tools module: %w", err)
		}
		fmt.Fprintf(&key, "%s %d\n%s", f, len(data), data)
	}
	return key.String(), nil
}

// buildEstimate is what the build takes on a 2-core machine with empty Go
// caches, downloading the modules included; the progress line says it. On
// a quiet 2-core machine it took 4m6s alone, and 7m0s in `make demo`, which
// builds it beside the control plane.
const buildEstimate = "3-7 minutes on 2 cores with empty Go caches"

func build(ctx context.Context, toolsDir, dir string, r Release, version string, progress io.Writer) error {
	_, _ = fmt.Fprintf(progress, "building KubeVirt %s: virt-api, virt-controller and its manifests (%s) into %s...\n", version, buildEstimate, dir)
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return fmt.Errorf("create the build directory: %w", err)
	}
	// The commands share most of their packages: one build compiles them once.
	// The generator is needed only here; it goes once it has printed.
	bin := filepath.Join(dir, "bin")
	buildCommands := testcluster.BuildCommands
	if r.Cgo {
		buildCommands = testcluster.BuildCgoCommands
	}
	if err := buildCommands(ctx, toolsDir, bin, []testcluster.Command{
		{Name: "virt-api", Pkg: "kubevirt.io/kubevirt/cmd/virt-api"},
		{Name: "virt-controller", Pkg: "kubevirt.io/kubevirt/cmd/virt-controller"},
		{Name: "kubevirt-manifests", Pkg: "./" + generatorPkg},
	}, "", "-modfile="+r.ModFile, "-tags="+r.Tags); err != nil {
		return err
	}
	gen := filepath.Join(bin, "kubevirt-manifests")
	defer func() { _ = os.Remove(gen) }()
	for _, set := range manifestSets {
		out, err := exec.CommandContext(ctx, gen, set).Output()
		if err != nil {
			return fmt.Errorf("kubevirt-manifests %s: %w%s", set, err, stderrOf(err))
		}
		if err := os.WriteFile(filepath.Join(dir, "manifests", set+".yaml"), out, 0o644); err != nil {
			return fmt.Errorf("write KubeVirt's %s: %w", set, err)
		}
	}
	return nil
}

func stderrOf(err error) string {
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return ": " + string(exit.Stderr)
	}
	return ""
}
