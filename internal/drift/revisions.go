package drift

import (
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// RevisionDiff is the unified diff from pinned, the VM revision a
// workload's template pins (hash pinnedHash), to now, the one `rollout
// restart` would pin (prototype.Revise, hash nowHash): each reduced, as
// Compare reduces a VM, to labels, annotations and spec in YAML. "-"
// lines are what the agents derive their VMs from, "+" lines what they
// would after a rollout restart, as kubectl diff shows a change before it
// is applied. "" when they hold the same.
func RevisionDiff(pinned, now *kubevirtv1.VirtualMachine, pinnedHash, nowHash string) (string, error) {
	var docs [2]string
	for i, r := range []*kubevirtv1.VirtualMachine{pinned, now} {
		c, err := controlled(r)
		if err != nil {
			return "", err
		}
		b, err := yaml.Marshal(c)
		if err != nil {
			return "", fmt.Errorf("encode the revision of prototype %s/%s: %w", r.Namespace, r.Name, err)
		}
		docs[i] = string(b)
	}
	name := "prototype " + now.Namespace + "/" + now.Name
	return unified(docs[0], docs[1], name+" (VM revision "+pinnedHash+", pinned)", name+" (VM revision "+nowHash+", rollout restart pins)")
}
