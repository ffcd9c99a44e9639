package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// What the create policy compares a VM with, its source. The workload's
// revision store is the policy's parameter, and the source is the revision the VM claims in its
// contract.AnnotationVMRevision, read from the store's spec
// (spec.revisions[<hash>], see package revision): a revision the store
// lacks, never rolled out or pruned, is no source, and the VM is refused.
// The store is one object, so a revision's existence and its content are
// read together: no cache lag admits a VM of a revision the store holds
// no more, and a VM that claims no revision is refused: the live
// prototype is never a source.
//
// The policy cannot read the agent's Pod, only its name and UID from the
// bound token, so it cannot check that the claim is the revision the Pod's
// template pins: a token may claim any revision its workload's store
// retains (docs/security.md).

// paramKind is the kind of the create policy's parameter.
func (p Params) paramKind() *admissionregistrationv1.ParamKind {
	return &admissionregistrationv1.ParamKind{APIVersion: revision.StoreGVR.GroupVersion().String(), Kind: revision.StoreKind}
}

// paramRef names the create policy's parameter: the revision store beside
// the workload. Without it no VM can be created.
func (p Params) paramRef() *admissionregistrationv1.ParamRef {
	ref := &admissionregistrationv1.ParamRef{Name: p.storeName(), Namespace: p.Namespace}
	ref.ParameterNotFoundAction = ptr.To(admissionregistrationv1.DenyAction)
	return ref
}

// noSource is what variables.source holds for a claim the store lacks: a
// VM of no name, which the refusal of the claim explains, shaped so that
// the other variables read it without error.
const noSource = `dyn({'metadata': dyn({'name': dyn(''), 'uid': dyn(''), 'generation': dyn(0)}), ` +
	`'spec': dyn({'template': dyn({'spec': dyn({'domain': dyn({})})})})})`

// sourceVariables are the create policy's variables that read params: the
// revision the VM claims, and the source.
func (p Params) sourceVariables() []admissionregistrationv1.Variable {
	claim := admissionregistrationv1.Variable{Name: "revision",
		Expression: `object.metadata.?annotations[?` + literal(contract.AnnotationVMRevision) + `].orValue('')`}
	stored := `params.?spec.?revisions[?variables.revision]`
	return []admissionregistrationv1.Variable{claim,
		{Name: "claimHeld", Expression: `variables.revision != '' && ` + stored + `.hasValue()`},
		{Name: "source", Expression: stored + `.orValue(` + noSource + `)`},
	}
}

// claimValidation refuses a VM whose claimed revision is no source: one
// the store lacks, or none.
func (p Params) claimValidation() admissionregistrationv1.Validation {
	v := forbid(`variables.claimHeld`, fmt.Sprintf("the VirtualMachine claims no VM revision that %s %s/%s holds (%s): "+
		"a vmctl agent may only create VMs of a revision its workload rolled out and still retains", revision.StoreKind, p.Namespace, p.storeName(), contract.AnnotationVMRevision))
	v.MessageExpression = fmt.Sprintf(`"the VirtualMachine claims VM revision '" + variables.revision + "', which %s %s/%s does not hold: `+
		`a vmctl agent may only create VMs of a revision its workload rolled out and still retains"`, revision.StoreKind, p.Namespace, p.storeName())
	return v
}

// sourceName says, in refusals, what the VM is compared with.
func (p Params) sourceName() string {
	return "the VM revision's"
}

// derivedFrom says, in refusals, what a VM must be derived from.
func (p Params) derivedFrom() string {
	return fmt.Sprintf("a vmctl agent may only create VMs derived from a VM revision of %s/%s that its workload retains", p.protoNamespace(), p.Prototype)
}

// revisionNote names, in the annotations' refusal, the annotation that
// claims the revision.
func (p Params) revisionNote() string { return ", and the revision it claims" }
