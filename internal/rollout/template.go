package rollout

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
)

// templateOfPrototype is what a workload's Pod template holds of its
// prototype: where its agents are placed, and the room they hold.
type templateOfPrototype struct {
	Annotations map[string]string           `json:"annotations,omitempty"`
	Placement   placement.Placement         `json:"placement"`
	Resources   corev1.ResourceRequirements `json:"agentResources"`
}

func ofPrototype(tmpl *corev1.PodTemplateSpec) templateOfPrototype {
	out := templateOfPrototype{Annotations: map[string]string{}, Placement: placement.FromPodSpec(&tmpl.Spec)}
	for _, k := range []string{contract.AnnotationPlacement, contract.AnnotationReservation} {
		if v, ok := tmpl.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	for _, c := range tmpl.Spec.Containers {
		if c.Name == contract.ContainerName {
			out.Resources = c.Resources
		}
	}
	return out
}

// TemplateDrift returns a unified diff of what w's Pod template holds of
// its prototype (its placement and the room its agents hold for their VMs)
// against what the prototype v asks for now: "-" lines are the template's,
// "+" lines what `rollout restart` would write. It is "" when they agree,
// or when v's placement or reservation could not be read.
func TemplateDrift(w Workload, v Version) (string, error) {
	tmpl := w.Template()
	if !placementStale(tmpl, v) && !reservationStale(tmpl, v) {
		return "", nil
	}
	now := tmpl.DeepCopy()
	applyPrototype(now, v)
	before, err := yaml.Marshal(ofPrototype(tmpl))
	if err != nil {
		return "", err
	}
	after, err := yaml.Marshal(ofPrototype(now))
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s/%s", w.Meta().GetNamespace(), w.Name())
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(strings.TrimSuffix(string(before), "\n")),
		B:        difflib.SplitLines(strings.TrimSuffix(string(after), "\n")),
		FromFile: name + " (Pod template)",
		ToFile:   fmt.Sprintf("%s (prototype %s now)", name, w.Prototype()),
		Context:  3,
	})
}
