package reserve

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypeapi "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"kubevirt.io/client-go/kubevirt/scheme"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Load reads from the cluster the Inputs that Launcher needs for vm: its
// instancetype and preference as the VM controller finds them (the
// ControllerRevision that spec.*.revisionName or status.*Ref names, else the
// object itself), the KubeVirt CR that virt-controller reads its
// configuration from (nil when none has a status.phase), and the overhead of
// that CR's defaultRuntimeClass. It needs get on instancetypes, preferences,
// ControllerRevisions and RuntimeClasses and list on kubevirts, and says
// which is missing when it fails.
func Load(ctx context.Context, c kube.Clients, vm *kubevirtv1.VirtualMachine) (Inputs, error) {
	var in Inputs
	if vm == nil {
		return in, fmt.Errorf("no VM to load the inputs of")
	}
	if ref := vm.Spec.Instancetype; ref != nil {
		spec, err := loadInstancetype(ctx, c, vm)
		if err != nil {
			return in, err
		}
		in.Instancetype = spec
	}
	if ref := vm.Spec.Preference; ref != nil {
		spec, err := loadPreference(ctx, c, vm)
		if err != nil {
			return in, err
		}
		in.Preference = spec
	}
	kv, err := LoadKubeVirt(ctx, c)
	if err != nil {
		return in, err
	}
	in.KubeVirt = kv
	if kv != nil && kv.Spec.Configuration.DefaultRuntimeClass != "" {
		name := kv.Spec.Configuration.DefaultRuntimeClass
		rc, err := c.Kube.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return in, fmt.Errorf("read RuntimeClass %q, the defaultRuntimeClass of KubeVirt %s/%s: %w; %s",
				name, kv.Namespace, kv.Name, err, hint(err, "create it, or clear spec.configuration.defaultRuntimeClass: without it KubeVirt's launcher Pods are refused too"))
		}
		if rc.Overhead != nil {
			in.PodOverhead = rc.Overhead.PodFixed.DeepCopy()
		}
	}
	return in, nil
}

func loadInstancetype(ctx context.Context, c kube.Clients, vm *kubevirtv1.VirtualMachine) (*instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	ref := vm.Spec.Instancetype
	rev, err := findRevision(ctx, c, vm.Namespace, ref.Name, ref.RevisionName, vm.Status.InstancetypeRef)
	if err != nil {
		return nil, fmt.Errorf("instancetype %q of VM %s/%s: %w", ref.Name, vm.Namespace, vm.Name, err)
	}
	if rev != nil {
		obj, err := decodeRevision(rev)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *instancetypev1beta1.VirtualMachineInstancetype:
			return &o.Spec, nil
		case *instancetypev1beta1.VirtualMachineClusterInstancetype:
			return &o.Spec, nil
		}
		return nil, fmt.Errorf("ControllerRevision %s/%s of VM %s/%s holds a %T, not an instancetype", rev.Namespace, rev.Name, vm.Namespace, vm.Name, obj)
	}
	client := c.KubeVirt.InstancetypeV1beta1()
	switch strings.ToLower(ref.Kind) {
	case instancetypeapi.SingularResourceName, instancetypeapi.PluralResourceName:
		it, err := client.VirtualMachineInstancetypes(vm.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, refError(vm, "VirtualMachineInstancetype", vm.Namespace+"/"+ref.Name, "spec.instancetype", err)
		}
		return &it.Spec, nil
	case instancetypeapi.ClusterSingularResourceName, instancetypeapi.ClusterPluralResourceName, "":
		it, err := client.VirtualMachineClusterInstancetypes().Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, refError(vm, "VirtualMachineClusterInstancetype", ref.Name, "spec.instancetype", err)
		}
		return &it.Spec, nil
	}
	return nil, fmt.Errorf("VM %s/%s: spec.instancetype.kind %q is not an instancetype kind: use VirtualMachineClusterInstancetype or VirtualMachineInstancetype", vm.Namespace, vm.Name, ref.Kind)
}

func loadPreference(ctx context.Context, c kube.Clients, vm *kubevirtv1.VirtualMachine) (*instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	ref := vm.Spec.Preference
	rev, err := findRevision(ctx, c, vm.Namespace, ref.Name, ref.RevisionName, vm.Status.PreferenceRef)
	if err != nil {
		return nil, fmt.Errorf("preference %q of VM %s/%s: %w", ref.Name, vm.Namespace, vm.Name, err)
	}
	if rev != nil {
		obj, err := decodeRevision(rev)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *instancetypev1beta1.VirtualMachinePreference:
			return &o.Spec, nil
		case *instancetypev1beta1.VirtualMachineClusterPreference:
			return &o.Spec, nil
		}
		return nil, fmt.Errorf("ControllerRevision %s/%s of VM %s/%s holds a %T, not a preference", rev.Namespace, rev.Name, vm.Namespace, vm.Name, obj)
	}
	client := c.KubeVirt.InstancetypeV1beta1()
	switch strings.ToLower(ref.Kind) {
	case instancetypeapi.SingularPreferenceResourceName, instancetypeapi.PluralPreferenceResourceName:
		p, err := client.VirtualMachinePreferences(vm.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, refError(vm, "VirtualMachinePreference", vm.Namespace+"/"+ref.Name, "spec.preference", err)
		}
		return &p.Spec, nil
	case instancetypeapi.ClusterSingularPreferenceResourceName, instancetypeapi.ClusterPluralPreferenceResourceName, "":
		p, err := client.VirtualMachineClusterPreferences().Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, refError(vm, "VirtualMachineClusterPreference", ref.Name, "spec.preference", err)
		}
		return &p.Spec, nil
	}
	return nil, fmt.Errorf("VM %s/%s: spec.preference.kind %q is not a preference kind: use VirtualMachineClusterPreference or VirtualMachinePreference", vm.Namespace, vm.Name, ref.Kind)
}

// findRevision mirrors the instancetype package's revisionFinder: the
// ControllerRevision the spec names wins; else the one the status names,
// if it is of the object referenced; else none, and the object itself
// counts.
func findRevision(ctx context.Context, c kube.Clients, ns, name, specRevision string, status *kubevirtv1.InstancetypeStatusRef) (*appsv1.ControllerRevision, error) {
	revisions := c.Kube.AppsV1().ControllerRevisions(ns)
	if specRevision != "" {
		rev, err := revisions.Get(ctx, specRevision, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read ControllerRevision %s/%s: %w; %s", ns, specRevision, err,
				hint(err, "clear revisionName so that KubeVirt stores a new one"))
		}
		return rev, nil
	}
	if status == nil || status.ControllerRevisionRef == nil || status.ControllerRevisionRef.Name == "" {
		return nil, nil
	}
	rev, err := revisions.Get(ctx, status.ControllerRevisionRef.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read ControllerRevision %s/%s: %w; %s", ns, status.ControllerRevisionRef.Name, err,
			hint(err, "wait for KubeVirt to store the VM's revision again"))
	}
	if rev.Labels[instancetypeapi.ControllerRevisionObjectNameLabel] != name {
		return nil, nil
	}
	return rev, nil
}

func decodeRevision(rev *appsv1.ControllerRevision) (any, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(rev.Data.Raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return obj, nil
}

// LoadKubeVirt mirrors ClusterConfig.GetConfigFromKubeVirtCR: the KubeVirt
// CR that is not being deleted and has a status.phase, the one Deployed
// first; nil when there is none, and virt-controller runs on its defaults.
func LoadKubeVirt(ctx context.Context, c kube.Clients) (*kubevirtv1.KubeVirt, error) {
	list, err := c.KubeVirt.KubevirtV1().KubeVirts(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list KubeVirt CRs in all namespaces, whose configuration sizes the launcher Pod: %w; %s", err,
			hint(err, "is KubeVirt installed?"))
	}
	var found *kubevirtv1.KubeVirt
	for i := range list.Items {
		kv := &list.Items[i]
		if kv.DeletionTimestamp != nil || kv.Status.Phase == "" {
			continue
		}
		if found == nil || kv.Status.Phase == kubevirtv1.KubeVirtPhaseDeployed {
			found = kv
		}
	}
	return found, nil
}

func refError(vm *kubevirtv1.VirtualMachine, kind, name, field string, err error) error {
	return fmt.Errorf("VM %s/%s: read %s %s: %w; %s", vm.Namespace, vm.Name, kind, name, err,
		hint(err, "create it or fix "+field))
}

// hint says what to do about err: grant the permission, or what
// notFound says.
func hint(err error, notFound string) string {
	switch {
	case apierrors.IsNotFound(err):
		return notFound
	case apierrors.IsForbidden(err):
		return "grant the reading identity that permission"
	}
	return "retry once the API server answers"
}
