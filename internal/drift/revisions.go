package drift

import (
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// RevisionDiff compares pinned, the VM revision a workload's template pins
// (hash pinnedHash), with now, the one `rollout restart` would pin
// (prototype.Revise, hash nowHash): each reduced, as Compare reduces a VM,
// to labels, annotations and spec in YAML, pinned's as the Result's Live
// and now's as its Derived. Its Diff's "-" lines are what the agents
// derive their VMs from, "+" lines what they would after a rollout
// restart, as kubectl diff shows a change before it is applied; none when
// the two hold the same.
func RevisionDiff(pinned, now *kubevirtv1.VirtualMachine, pinnedHash, nowHash string) (Result, error) {
	r := Result{Namespace: now.Namespace, Name: now.Name}
	var docs [2]string
	for i, rev := range []*kubevirtv1.VirtualMachine{pinned, now} {
		c, err := controlled(rev)
		if err != nil {
			return r, err
		}
		b, err := yaml.Marshal(c)
		if err != nil {
			return r, fmt.Errorf("encode the revision of prototype %s/%s: %w", rev.Namespace, rev.Name, err)
		}
		docs[i] = string(b)
	}
	r.Live, r.Derived = docs[0], docs[1]
	name := "prototype " + now.Namespace + "/" + now.Name
	var err error
	r.Diff, err = unified(r.Live, r.Derived, name+" (VM revision "+pinnedHash+", pinned)", name+" (VM revision "+nowHash+", rollout restart pins)")
	return r, err
}
