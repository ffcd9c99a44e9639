package scaffold

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TestDocsListDerivedFields: docs/security.md's tables of the fields derive
// sets and of those the cluster writes are derive.Fields and
// derive.ClusterFields, each with how the create policy checks it.
func TestDocsListDerivedFields(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What derive sets\n")
	if !ok {
		t.Fatal(`docs/security.md has no section "What derive sets"`)
	}
	checks := fieldChecks()
	for i, fields := range [][]derive.Field{derive.Fields(), derive.ClusterFields()} {
		var want []string
		for _, f := range fields {
			check, ok := checks[f.Path]
			if !ok {
				t.Errorf("fieldChecks says nothing of %s", f.Path)
			}
			want = append(want, "| `"+f.Path+"` | "+f.Rule+" | "+check+" |")
		}
		got := tables(section)
		if len(got) <= i {
			t.Fatalf("docs/security.md's section What derive sets has %d tables, want 2", len(got))
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("docs/security.md's table %d of What derive sets (-want +got):\n%s\nwant:\n%s", i+1, diff, strings.Join(want, "\n"))
		}
	}
}

// tables are the rows of the Markdown tables in text, but their header and
// separator.
func tables(text string) [][]string {
	var out [][]string
	var rows []string
	for _, line := range append(strings.Split(text, "\n"), "") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
			continue
		}
		if len(rows) > 2 {
			out = append(out, rows[2:])
		}
		rows = nil
	}
	return out
}

// fieldChecks says how the create policy checks each of derive.Fields and
// derive.ClusterFields, by path: docs/security.md shows it beside the
// field.
func fieldChecks() map[string]string {
	const (
		exactly   = "exactly"
		byList    = "part by part: each element the prototype's in its place (by name), but this"
		asVMs     = "part by part, as the VM's"
		matcher   = "part by part: the prototype's matcher but this"
		notNeeded = "not: the API server sets it"
	)
	return map[string]string{
		"apiVersion":                               exactly,
		"kind":                                     exactly,
		"metadata.name":                            "exactly: past 63 characters the cut and the UID its bound token carries",
		"metadata.namespace":                       "by the binding, which matches only the fleet's namespace",
		"metadata.labels":                          "part by part: the prototype's labels whole, vmctl's each by its rule, none empty where derive sets none",
		"metadata.annotations":                     "part by part: the prototype's annotations whole, vmctl's each by its rule, none empty where derive sets none",
		"metadata.ownerReferences":                 "the whole list, built in CEL",
		"metadata.*":                               "by the keys metadata may hold",
		"spec.runStrategy":                         exactly,
		"spec.running":                             exactly,
		"spec.instancetype.revisionName":           matcher,
		"spec.preference.revisionName":             matcher,
		"spec.dataVolumeTemplates[].metadata.name": "part by part: each template the prototype's in its place but its name and namespace; the name exactly, as the VM's",
		"spec.dataVolumeTemplates[].metadata.namespace": "part by part, as the name",
		"spec.template.metadata.labels":                 asVMs,
		"spec.template.metadata.name":                   exactly,
		"spec.template.metadata.namespace":              exactly,
		"spec.template.metadata.generateName":           exactly,
		"spec.template.spec.hostname":                   exactly,
		"spec.template.spec.subdomain":                  exactly,
		"spec.template.spec.priorityClassName":          "exactly, with the annotation",
		"spec.template.spec.evictionStrategy":           exactly,
		"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": "the whole list, built in CEL from the prototype's",
		"spec.template.spec.domain.firmware.uuid":                                "exactly: derive sets it rather than clear it, which KubeVirt would fill in at random",
		"spec.template.spec.domain.firmware.serial":                              "exactly, as the UUID",
		"spec.template.spec.domain.devices.interfaces[].macAddress":              byList,
		"spec.template.spec.volumes[].dataVolume.name":                           byList,
		"spec.template.spec.volumes[].persistentVolumeClaim.claimName":           byList,
		"spec.template.spec.volumes[].ephemeral.persistentVolumeClaim.claimName": byList,
		"status":                     "not: the API server drops it on create",
		"metadata.uid":               notNeeded,
		"metadata.creationTimestamp": notNeeded,
		"metadata.generation":        notNeeded,
		"metadata.managedFields":     "not",
		"metadata.annotations[" + kubevirtv1.ControllerAPILatestVersionObservedAnnotation + "]":  "unset on create: derive drops the prototype's",
		"metadata.annotations[" + kubevirtv1.ControllerAPIStorageVersionObservedAnnotation + "]": "unset on create: derive drops the prototype's",
		"spec.template.metadata.annotations[" + pciTopology + "]":                                "part by part: the template's other annotations whole",
		"spec.template.metadata.annotations[" + kubevirtv1.PciInterfaceSlotCountAnnotation + "]": "as any annotation of the template: the prototype's",
	}
}
