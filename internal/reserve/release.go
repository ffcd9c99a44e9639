package reserve

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// release is the KubeVirt release whose rules the rule follows: v1.<minor>.
type release uint

// The releases the rule knows, each held to its virt-controller by
// TestLauncherReservationMatchesKubeVirt.
const (
	v1_7 release = 7
	v1_8 release = 8
	v1_9 release = 9

	oldestKnown = v1_7
	newestKnown = v1_9
)

func (r release) String() string { return fmt.Sprintf("v1.%d", uint(r)) }

// releaseOf is the release whose rules apply to the KubeVirt that kv
// deploys, by its status.observedKubeVirtVersion (virt-operator writes the
// version it deployed there), and a note when vmctl does not know that
// release: a newer one, an unreadable or missing version (no KubeVirt CR)
// follow the newest rules vmctl knows, an older one the oldest.
func releaseOf(kv *kubevirtv1.KubeVirt) (release, string) {
	if kv == nil {
		return newestKnown, fmt.Sprintf("no KubeVirt CR has a status.phase, so vmctl cannot tell KubeVirt's release: "+
			"the reservation follows KubeVirt %s's defaults", newestKnown)
	}
	observed := kv.Status.ObservedKubeVirtVersion
	v, err := version.ParseGeneric(observed)
	if err != nil || v.Major() != 1 {
		return newestKnown, fmt.Sprintf("KubeVirt %s/%s has status.observedKubeVirtVersion %q, which vmctl cannot read as a release: "+
			"the reservation follows KubeVirt %s's rules", kv.Namespace, kv.Name, observed, newestKnown)
	}
	r := release(v.Minor())
	switch {
	case r > newestKnown:
		return newestKnown, fmt.Sprintf("KubeVirt %s is newer than the releases vmctl knows (%s to %s): the reservation follows %s's rules, "+
			"and `kubectl vmctl status` says where KubeVirt counts another memory overhead; upgrade kubectl-vmctl", observed, oldestKnown, newestKnown, newestKnown)
	case r < oldestKnown:
		return oldestKnown, fmt.Sprintf("KubeVirt %s is older than the releases vmctl knows (%s to %s): the reservation follows %s's rules",
			observed, oldestKnown, newestKnown, oldestKnown)
	}
	return r, ""
}

// gateState is a feature gate's state in a release, as
// featuregate.RegisterFeatureGate records it.
type gateState int

const (
	alpha gateState = iota
	beta
	ga
)

// The feature gates the rule reads (pkg/virt-config/featuregate/active.go).
const (
	imageVolumeGate = "ImageVolume"
	alignCPUsGate   = "AlignCPUs"
)

// stateOf is gate's state in r, from each release's
// pkg/virt-config/featuregate/active.go: ImageVolume is Beta and AlignCPUs
// Alpha in v1.7.0, v1.8.0 and v1.9.0.
func stateOf(gate string, _ release) gateState {
	if gate == imageVolumeGate {
		return beta
	}
	return alpha
}

// gateEnabled mirrors how each release decides that a feature gate is on:
//   - v1.7 (ClusterConfig.isFeatureGateEnabled, pkg/virt-config/feature-gates.go):
//     GA, or listed in developerConfiguration.featureGates;
//   - v1.8 (the same function): GA, or listed, unless not listed and listed
//     in disabledFeatureGates; a Beta gate is off until listed;
//   - v1.9 (featuregate.IsEnabled): GA, then listed, then listed as
//     disabled (off), then on when Beta.
func gateEnabled(gate string, dev *kubevirtv1.DeveloperConfiguration, r release) bool {
	state := stateOf(gate, r)
	if state == ga {
		return true
	}
	if dev != nil {
		if slices.Contains(dev.FeatureGates, gate) {
			return true
		}
		if r >= v1_8 && slices.Contains(dev.DisabledFeatureGates, gate) {
			return false
		}
	}
	return r >= v1_9 && state == beta
}
