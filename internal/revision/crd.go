package revision

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// RetainedRevisionRule is the store's transition rule on each revision: one
// the store retains never changes. Entries of a map are correlated by key,
// so the rule holds each revision to its old self; a revision may be added
// or pruned. metadata's and spec's fields are each preserved unknown data,
// which CEL compares whole.
const RetainedRevisionRule = "self == oldSelf"

// StoreCRD is the CustomResourceDefinition of the revision stores
// (VMRevisionStore, namespaced): a spec of revisions by hash, each a
// VirtualMachine's apiVersion, kind, metadata and spec as vmctl wrote them,
// never changed while retained (RetainedRevisionRule). The schema
// preserves a revision's metadata and spec as they are: the create
// policy compares the VMs with them, and only vmctl writes them.
func StoreCRD() *apiextensionsv1.CustomResourceDefinition {
	anything := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{
			XPreserveUnknownFields: ptr.To(true),
		}},
	}
	rev := apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "A VM revision: a snapshot of the prototype VirtualMachine, which the VMs of a template that pins its hash are derived from.",
		Required:    []string{"apiVersion", "kind", "metadata", "spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   anything,
			"spec":       anything,
		},
		XValidations: apiextensionsv1.ValidationRules{{
			Rule:    RetainedRevisionRule,
			Message: "a VM revision the store retains never changes: its hash names its content",
		}},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: StoreResource + "." + StoreGroup,
			Labels: map[string]string{
				contract.LabelName:      contract.AppName,
				contract.LabelManagedBy: contract.ManagedBy,
			},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: StoreGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: StoreResource, Singular: "vmrevisionstore", Kind: StoreKind, ListKind: StoreKind + "List",
				Categories: []string{contract.AppName},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: StoreVersion, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:        "object",
					Description: "The VM revisions that a workload's retained Pod templates pin (annotation " + contract.AnnotationVMRevision + "), by hash.",
					Required:    []string{"spec"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": {Type: "string"},
						"kind":       {Type: "string"},
						"metadata":   {Type: "object"},
						"spec": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"revisions": {
									Type:                 "object",
									AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &rev},
								},
							},
						},
					},
				}},
			}},
		},
	}
}
