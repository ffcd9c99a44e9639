package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// pciTopology is the PCI topology annotation KubeVirt v1.8's webhook adds to
// a VM template that lacks one, and its value.
const pciTopology = kubevirtv1.PciTopologyVersionAnnotation

// specVariables judge the VM's spec: the source's, but the fields derive
// sets, part by part.
func (p Params) specVariables() []admissionregistrationv1.Variable {
	v := func(name, expression string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expression}
	}
	matcher := func(m string) string {
		return fmt.Sprintf("('%[1]s' in variables.spec) == ('%[1]s' in variables.sourceSpec) && (!('%[1]s' in variables.sourceSpec) || (\n  %[2]s &&\n  %[3]s))",
			m, sameBut("variables.spec."+m, "variables.sourceSpec."+m, listed("spec."+m+".")...), unset("variables.spec."+m, "revisionName"))
	}
	ta, sta := "variables.templateAnnotations", "variables.sourceTemplateAnnotations"
	orEmpty := func(cond, path string) string { return "(" + cond + " ? [] : ['" + path + "'])" }
	return []admissionregistrationv1.Variable{
		// The claims the workload makes per replica: a VM uses its
		// Pod's own in their place (newName).
		v("replicaClaims", keyList(p.replicaClaimNames())),
		v("runsAlways", value("variables.spec", "runStrategy")+" == 'Always' && !('running' in variables.spec) &&\n"+
			value("variables.templateSpec", "evictionStrategy")+" == 'External'"),
		v("ownIdentity", value("variables.firmware", "uuid")+" == variables.podUID && "+value("variables.firmware", "serial")+" == variables.podUID &&\n"+
			"variables.interfaces.all(i, !('macAddress' in i))"),
		// The node pin, as derive's pinToNode makes it: first in the
		// matchFields of each required term, of which there is one, empty
		// but for the pin, where the source has none.
		v("pin", `{'key': dyn('metadata.name'), 'operator': dyn('In'), 'values': dyn([variables.node])}`),
		v("sourceTerms", `variables.sourceRequired.?nodeSelectorTerms.orValue([])`),
		v("pinnedTerms", cel(`
			(size(variables.sourceTerms) == 0 ? [{}] : variables.sourceTerms).map(t, {
				?'matchExpressions': t.?matchExpressions,
				'matchFields': dyn([variables.pin] + t.?matchFields.orValue([]).filter(f, f != variables.pin))})`)),
		v("pinned", `variables.required.?nodeSelectorTerms.orValue([]) == variables.pinnedTerms`),
		// dataVolumeTemplates in the source's order, each the source's but
		// named "<template>-<VM>" as derive.Name names it (nameRule) and in
		// no namespace; else a template could take the name of another
		// app's PersistentVolumeClaim, which CDI adopts into the VM's
		// DataVolume (KubeVirt marks every DataVolume it makes from a
		// template cdi.kubevirt.io/allowClaimAdoption).
		v("templatePairs", pairs("variables.templates", "variables.sourceTemplates", "variables.sourceTemplateNames")),
		v("templatesDerived", cel(`
			size(variables.templates) == size(variables.sourceTemplates) && `+unique("variables.sourceTemplateNames")+` &&
			variables.templatePairs.all(p,
				`+sameBut("p.vm", "p.source", listed("spec.dataVolumeTemplates[].")...)+` &&
				`+sameBut("p.vm.?metadata.orValue({})", "p.source.?metadata.orValue({})", listed("spec.dataVolumeTemplates[].metadata.")...)+` &&
				`+unset("p.vm.?metadata.orValue({})", "namespace")+` &&
				(`+nameRule("p.vm.?metadata.?name.orValue('')", "(p.source.?metadata.?name.orValue('') + '-' + object.metadata.name)", "\t\t\t\t")+`))`)),
		// Volumes in the source's order, each the source's but a claim the
		// source makes from a dataVolumeTemplate (through a dataVolume, a
		// persistentVolumeClaim or an ephemeral volume), which is the VM's
		// own template in that template's place, and a claim the workload
		// makes per replica, which is the Pod's own.
		v("volumePairs", pairs("variables.volumes", "variables.sourceVolumes", "variables.sourceVolumeNames")),
		v("volumesDerived", cel(`
			variables.volumeNames == variables.sourceVolumeNames && `+unique("variables.sourceVolumeNames")+` &&
			size(variables.templateNames) == size(variables.sourceTemplateNames) &&
			variables.volumePairs.all(p,
				`+sameBut("p.vm", "p.source", listed("spec.template.spec.volumes[].")...)+` &&
				`+renamedClaim("p.vm", "p.source", "dataVolume", "name", false)+` &&
				`+renamedClaim("p.vm", "p.source", "persistentVolumeClaim", "claimName", true)+` &&
				('ephemeral' in p.vm) == ('ephemeral' in p.source) && (!('ephemeral' in p.source) || (
					`+sameBut("p.vm.ephemeral", "p.source.ephemeral", listed("spec.template.spec.volumes[].ephemeral.")...)+` &&
					`+renamedClaim("p.vm.ephemeral", "p.source.ephemeral", "persistentVolumeClaim", "claimName", true)+`)))`)),
		v("interfacePairs", pairs("variables.interfaces", "variables.sourceInterfaces", "variables.sourceInterfaceNames")),
		v("ownDNSName", p.dnsNameExpression()),
		v("priorityClass", p.priorityClassExpression()),
		// Where the VM differs from the source in a field derive does not
		// set: the maps down to each field it sets, every key but that
		// field's, and those fields of the source derive keeps.
		v("unlisted", specMapsDiffer()+" +\n"+
			orEmpty(matcher("instancetype"), "spec.instancetype")+" +\n"+
			orEmpty(matcher("preference"), "spec.preference")+" +\n"+
			// KubeVirt v1.8's webhook gives a VM a PCI topology where the
			// source, made before, has none (derive.ClusterFields).
			orEmpty(sameBut(ta, sta, pciTopology)+" &&\n("+literal(pciTopology)+" in "+sta+" ? "+exactly(ta, pciTopology, sta+"["+literal(pciTopology)+"]")+" :\n"+
				"!("+literal(pciTopology)+" in "+ta+") || "+ta+"["+literal(pciTopology)+"] == "+literal(kubevirtv1.PciTopologyVersionV3)+")", "spec.template.metadata.annotations")+" +\n"+
			orEmpty("variables.interfaceNames == variables.sourceInterfaceNames && "+unique("variables.sourceInterfaceNames")+" &&\n"+
				"variables.interfacePairs.all(p, "+sameBut("p.vm", "p.source", listed("spec.template.spec.domain.devices.interfaces[].")...)+")",
				"spec.template.spec.domain.devices.interfaces")),
	}
}

// dnsNameExpression holds when the VM's hostname and subdomain are what
// derive gives it: for a StatefulSet's VM its Pod's name and the
// StatefulSet's Service; else its own name where the source has a hostname,
// and the source's subdomain. Else one agent could take another VM's
// <hostname>.<subdomain> name.
func (p Params) dnsNameExpression() string {
	spec, source := "variables.templateSpec", "variables.sourceTemplateSpec"
	if p.subdomain() != "" {
		return value(spec, "hostname") + " == variables.pod && " + exactly(spec, "subdomain", literal(p.subdomain()))
	}
	return exactly(spec, "hostname", "("+value(source, "hostname")+" != '' ? object.metadata.name.replace('.', '-') : '')") + " &&\n" +
		exactly(spec, "subdomain", value(source, "subdomain"))
}

// dnsNameMessage says what dnsNameExpression allows.
func (p Params) dnsNameMessage() string {
	want := "where the prototype has a hostname its own name (dots as dashes), and the prototype's subdomain"
	if s := p.subdomain(); s != "" {
		want = "its Pod's name, and subdomain " + s
	}
	return "the VirtualMachine's hostname or subdomain is not its own: a vmctl agent may only create a VM whose hostname and subdomain are derive's: " + want
}

// priorityClassExpression holds when the VM's priority class is the
// source's, or where the workload has one its launcher priority class,
// and the VM's annotation names the launcher class exactly when it has it.
func (p Params) priorityClassExpression() string {
	spec, annotations := "variables.templateSpec", "variables.annotations"
	sourceClass := exactly(spec, "priorityClassName", value("variables.sourceTemplateSpec", "priorityClassName")) + " && " +
		exactly(annotations, contract.AnnotationLauncherPriorityClass, "''")
	if !p.hasLauncherPriorityClass() {
		return sourceClass
	}
	name := literal(p.launcherPriorityClassName())
	return "(" + sourceClass + ") ||\n(" + exactly(spec, "priorityClassName", name) + " && " + exactly(annotations, contract.AnnotationLauncherPriorityClass, name) + ")"
}

// priorityClassMessage says what priorityClassExpression allows.
func (p Params) priorityClassMessage() string {
	allowed := p.sourceName()
	if p.hasLauncherPriorityClass() {
		allowed += " or " + p.launcherPriorityClassName() + " (and annotation " + contract.AnnotationLauncherPriorityClass + " naming it)"
	}
	return fmt.Sprintf("the VirtualMachine's priority class is not %s: %s", allowed, p.derivedFrom())
}
