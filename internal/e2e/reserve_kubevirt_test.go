//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// setting is a configuration of the KubeVirt CR that the matrix runs its
// cases on, as a user writes it: feature gates listed, or listed as
// disabled.
type setting struct {
	name     string
	gates    []string
	disabled []string
	// marker is the CR's logVerbosity.virtLauncher, which virt-controller
	// writes into every launcher Pod it renders (VIRT_LAUNCHER_LOG_VERBOSITY
	// on compute): a launcher Pod with it was rendered with this setting.
	// Each setting has its own; 2 is KubeVirt's default, which it does not
	// write, and above 5 turns on libvirt's debug logs.
	marker uint
	// probe, when set, is a change virt-api refuses until it runs with the
	// setting (from v1.8, where the field exists).
	probe func(vm *kubevirtv1.VirtualMachine)
}

const (
	settingDefaults = "defaults"
	settingListed   = "gates-listed"
	settingDisabled = "gates-disabled"
)

// settings are the CR's configurations of the matrix: KubeVirt's defaults;
// the gates the new cases need listed, ImageVolume among them; and
// ImageVolume and VmiMemoryOverheadReport, Beta gates that v1.9 turns on,
// listed as disabled.
var settings = []setting{
	{name: settingDefaults, marker: 3},
	{name: settingListed, marker: 4, probe: withReservedOverhead,
		gates: []string{"ImageVolume", "PasstBinding", "ReservedOverheadMemlock", "VmiMemoryOverheadReport"}},
	{name: settingDisabled, marker: 5, disabled: []string{"ImageVolume", "VmiMemoryOverheadReport"}},
}

// reportsOverhead says whether KubeVirt version v, with setting s, reports
// a VMI's memory overhead (the feature gate VmiMemoryOverheadReport: none
// in v1.7, Alpha in v1.8, Beta in v1.9). It fails t on a release whose
// gate it does not know: say what that release does.
func reportsOverhead(t testing.TB, v string, s setting) bool {
	t.Helper()
	switch minor(t, v) {
	case 7:
		return false
	case 8:
		return slices.Contains(s.gates, "VmiMemoryOverheadReport")
	case 9:
		return !slices.Contains(s.disabled, "VmiMemoryOverheadReport")
	}
	t.Fatalf("the matrix does not know whether KubeVirt %s reports the memory overhead: add the release to reportsOverhead", v)
	return false
}

// minor is v's minor release, for a KubeVirt v1.
func minor(t testing.TB, v string) uint {
	t.Helper()
	parsed, err := version.ParseGeneric(v)
	if err != nil || parsed.Major() != 1 {
		t.Fatalf("KubeVirt version %q: not a v1 release", v)
	}
	return parsed.Minor()
}

// configure writes s into the cluster's KubeVirt CR, over the developer
// configuration it had (restored when t ends), and waits until
// virt-controller renders launcher Pods with it and, where s has a probe,
// virt-api admits VMs by it.
func configure(t *testing.T, k kubeVirtEnv, ns string, s setting) {
	t.Helper()
	ctx := context.Background()
	crs := k.virt.KubevirtV1().KubeVirts(kvharness.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cr, err := crs.Get(ctx, kvharness.CRName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		dev := cr.Spec.Configuration.DeveloperConfiguration
		if dev == nil {
			dev = &kubevirtv1.DeveloperConfiguration{}
		}
		dev.FeatureGates, dev.DisabledFeatureGates = s.gates, s.disabled
		dev.LogVerbosity = &kubevirtv1.LogVerbosity{VirtLauncher: s.marker}
		cr.Spec.Configuration.DeveloperConfiguration = dev
		_, err = crs.Update(ctx, cr, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("configure the KubeVirt CR for %s: %v", s.name, err)
	}

	// A probe VM, again under a new name until it is admitted and its
	// launcher Pod carries the setting's marker.
	vms := k.virt.KubevirtV1().VirtualMachines(ns)
	attempt := 0
	eventually(t, time.Minute, fmt.Sprintf("virt-api and virt-controller to run with the KubeVirt CR's setting %s", s.name), func(ctx context.Context) (bool, string, error) {
		attempt++
		name := fmt.Sprintf("probe-%d", attempt)
		vm := reserveVM(name)
		if s.probe != nil {
			s.probe(vm)
		}
		if _, err := vms.Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			return false, "virt-api: " + err.Error(), nil
		}
		defer func() { _ = vms.Delete(context.Background(), name, metav1.DeleteOptions{}) }()
		pods := waitLaunchers(t, k, ns, []string{name}, 30*time.Second)
		got := marker(pods[name])
		return got == fmt.Sprint(s.marker), "a launcher Pod rendered with verbosity " + got, nil
	})
}

// restoreKubeVirtCR puts the developer configuration of the KubeVirt CR
// back as it is now when t ends.
func restoreKubeVirtCR(t *testing.T, k kubeVirtEnv) {
	t.Helper()
	crs := k.virt.KubevirtV1().KubeVirts(kvharness.Namespace)
	cr, err := crs.Get(context.Background(), kvharness.CRName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the KubeVirt CR: %v", err)
	}
	was := cr.Spec.Configuration.DeveloperConfiguration.DeepCopy()
	t.Cleanup(func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cr, err := crs.Get(context.Background(), kvharness.CRName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cr.Spec.Configuration.DeveloperConfiguration = was
			_, err = crs.Update(context.Background(), cr, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("restore the KubeVirt CR: %v", err)
		}
	})
}

// marker is the virt-launcher verbosity pod's compute container runs with,
// "" for KubeVirt's default.
func marker(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name != "compute" {
			continue
		}
		for _, env := range c.Env {
			if env.Name == "VIRT_LAUNCHER_LOG_VERBOSITY" {
				return env.Value
			}
		}
	}
	return ""
}
