package derive

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// SharedVolume is one prototype volume every derived VM would write to.
type SharedVolume struct {
	// Volume is the volume's name in spec.template.spec.volumes.
	Volume string
	// Source is the volume source: "persistentVolumeClaim" or "dataVolume".
	Source string
	// Claim is the PersistentVolumeClaim or DataVolume it refers to.
	Claim string
}

// SharedVolumeError reports that a prototype has writable storage that every
// derived VM would share. Deriving again cannot succeed until the prototype
// changes, so callers should report it and not retry.
type SharedVolumeError struct {
	// Prototype is the prototype's "namespace/name".
	Prototype string
	// Volumes lists the offending volumes in spec order.
	Volumes []SharedVolume
}

// Error names the volumes and what to do instead.
func (e *SharedVolumeError) Error() string {
	vols := make([]string, len(e.Volumes))
	for i, v := range e.Volumes {
		vols[i] = fmt.Sprintf("volume %q (%s %q)", v.Volume, v.Source, v.Claim)
	}
	return fmt.Sprintf("prototype %s: every derived VM would write to the same disk through %s; "+
		"use containerDisk, ephemeral or dataVolumeTemplates instead, or pass --allow-shared-volumes to accept the risk",
		e.Prototype, strings.Join(vols, ", "))
}

// sharedVolumes lists the volumes that would give every derived VM the same
// writable disk: a writable persistentVolumeClaim, or a dataVolume that no
// dataVolumeTemplate makes (an existing DataVolume). Claims made by a
// dataVolumeTemplate are per VM once renamed, so they are fine however they
// are referenced, and so are the Pod's own claims, own.
func sharedVolumes(spec *kubevirtv1.VirtualMachineSpec, own map[string]bool) []SharedVolume {
	templated := make(map[string]bool, len(spec.DataVolumeTemplates))
	for _, t := range spec.DataVolumeTemplates {
		templated[t.Name] = true
	}
	var shared []SharedVolume
	for _, v := range spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			if c := v.PersistentVolumeClaim.ClaimName; !v.PersistentVolumeClaim.ReadOnly && !templated[c] && !own[c] {
				shared = append(shared, SharedVolume{Volume: v.Name, Source: "persistentVolumeClaim", Claim: v.PersistentVolumeClaim.ClaimName})
			}
		case v.DataVolume != nil:
			if !templated[v.DataVolume.Name] {
				shared = append(shared, SharedVolume{Volume: v.Name, Source: "dataVolume", Claim: v.DataVolume.Name})
			}
		}
	}
	return shared
}

// VolumeClaim is the name of the claim volume v uses, through a
// persistentVolumeClaim or an ephemeral volume over one, to read or
// change in place; nil for a volume of another source.
func VolumeClaim(v *kubevirtv1.Volume) *string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return &v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil && v.Ephemeral.PersistentVolumeClaim != nil:
		return &v.Ephemeral.PersistentVolumeClaim.ClaimName
	}
	return nil
}

// renameDataVolumes gives each dataVolumeTemplate a name of its own per
// derived VM, "<template>-<vm>" cut as the VM's name is (join), and points
// every volume that referred to the old name at the new one. Two templates
// whose names agree up to the cut would get one name: an error. KubeVirt accepts a template referenced by a
// dataVolume or a persistentVolumeClaim volume (the PVC has the DataVolume's
// name); an ephemeral volume on top of it is renamed too. The template's
// namespace is cleared: it must equal the VM's, which may differ from the
// prototype's.
func renameDataVolumes(spec *kubevirtv1.VirtualMachineSpec, vmName string, podUID types.UID) error {
	renamed := make(map[string]string, len(spec.DataVolumeTemplates))
	from := make(map[string]string, len(spec.DataVolumeTemplates))
	for i := range spec.DataVolumeTemplates {
		t := &spec.DataVolumeTemplates[i]
		newName := join(t.Name, vmName, podUID)
		if other, taken := from[newName]; taken {
			return fmt.Errorf("dataVolumeTemplates %q and %q would both be named %q for this Pod, as their names agree in the first %d characters once the VM's name is added: rename one of them",
				other, t.Name, newName, contract.CutLength)
		}
		from[newName] = t.Name
		renamed[t.Name] = newName
		t.Name = newName
		t.Namespace = ""
	}
	if len(renamed) == 0 {
		return nil
	}
	rename := func(name *string) {
		if n, ok := renamed[*name]; ok {
			*name = n
		}
	}
	for i := range spec.Template.Spec.Volumes {
		v := &spec.Template.Spec.Volumes[i]
		if v.DataVolume != nil {
			rename(&v.DataVolume.Name)
		} else if claim := VolumeClaim(v); claim != nil {
			rename(claim)
		}
	}
	return nil
}
