package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Version is the KubeVirt the harness runs: kubevirt.io/kubevirt as the tools
// module (internal/testcluster/kubevirt/tools) pins it. It is the newest that
// builds from the Go module proxy; the product's client (v1.9.0) speaks the
// same kubevirt.io/v1 API.
const Version = "v1.7.0"

// toolsModuleRel is the tools module's directory relative to the repository root.
const toolsModuleRel = "internal/testcluster/kubevirt/tools"

// Binaries locates KubeVirt's commands and the manifests that KubeVirt's own
// functions generated (see the tools module's kubevirt-manifests).
type Binaries struct {
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
}

// generatorPkg is the tools module's manifest generator, relative to it.
const generatorPkg = "cmd/kubevirt-manifests"

// manifestSets are kubevirt-manifests' arguments, each printed to <set>.yaml.
var manifestSets = []string{"crds", "rbac", "webhooks"}

func binariesIn(dir string) Binaries {
	return Binaries{
		VirtAPI:        filepath.Join(dir, "bin", "virt-api"),
		VirtController: filepath.Join(dir, "bin", "virt-controller"),
		CRDs:           filepath.Join(dir, "manifests", "crds.yaml"),
		RBAC:           filepath.Join(dir, "manifests", "rbac.yaml"),
		Webhooks:       filepath.Join(dir, "manifests", "webhooks.yaml"),
	}
}

// EnsureBinaries builds virt-api and virt-controller from the tools module and
// writes KubeVirt's manifests, once, into cacheDir/<hash> (see
// testcluster.CachedBuild, keyed also by the generator's source). cacheDir "" means <repo>/.cache/kubevirt. Progress
// goes to progress (nil discards it).
func EnsureBinaries(ctx context.Context, cacheDir string, progress io.Writer) (Binaries, error) {
	if progress == nil {
		progress = io.Discard
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	toolsDir := filepath.Join(root, toolsModuleRel)
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "kubevirt")
	}
	// The manifests depend on the generator's source too.
	gen, err := os.ReadFile(filepath.Join(toolsDir, generatorPkg, "main.go"))
	if err != nil {
		return Binaries{}, fmt.Errorf("read the manifest generator: %w", err)
	}
	dir, err := testcluster.CachedBuild(ctx, cacheDir, toolsDir, string(gen), "KubeVirt "+Version, progress, func(dir string) error {
		return build(ctx, toolsDir, dir, progress)
	})
	if err != nil {
		return Binaries{}, err
	}
	b := binariesIn(dir)
	for _, f := range []string{b.VirtAPI, b.VirtController, b.CRDs, b.RBAC, b.Webhooks} {
		if _, err := os.Stat(f); err != nil {
			return Binaries{}, fmt.Errorf("KubeVirt built into %s but incomplete (%w); remove that directory and retry", dir, err)
		}
	}
	return b, nil
}

// buildEstimate is what the build takes on a 2-core machine with empty Go
// caches, downloading the modules included; the progress line says it. On
// a quiet 2-core machine it took 4m6s, and 3m20s where `make demo` had
// downloaded its modules meanwhile.
const buildEstimate = "3-5 minutes on 2 cores with empty Go caches"

func build(ctx context.Context, toolsDir, dir string, progress io.Writer) error {
	_, _ = fmt.Fprintf(progress, "building KubeVirt %s: virt-api, virt-controller and its manifests (%s) into %s...\n", Version, buildEstimate, dir)
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return fmt.Errorf("create the build directory: %w", err)
	}
	// The commands share most of their packages: one build compiles them once.
	// The generator is needed only here; it goes once it has printed.
	bin := filepath.Join(dir, "bin")
	if err := testcluster.BuildCommands(ctx, toolsDir, bin, []testcluster.Command{
		{Name: "virt-api", Pkg: "kubevirt.io/kubevirt/cmd/virt-api"},
		{Name: "virt-controller", Pkg: "kubevirt.io/kubevirt/cmd/virt-controller"},
		{Name: "kubevirt-manifests", Pkg: "./" + generatorPkg},
	}, ""); err != nil {
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
