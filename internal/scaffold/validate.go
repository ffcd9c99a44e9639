package scaffold

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxStatefulSetName keeps "<name>-<revision hash>", which the StatefulSet
// controller puts in the controller-revision-hash label, within 63 characters.
const maxStatefulSetName = 52

// vmServiceSuffix names the Service in front of the derived VMs.
const vmServiceSuffix = "-vms"

// Validate reports every problem with p at once, each saying what to change.
func (p Params) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if p.LauncherPriority != nil && *p.LauncherPriority > HighestUserPriority {
		add("the VMs' priority %d is above %d, the highest a priority class other than the system's may have: no launcher priority class can carry it", *p.LauncherPriority, HighestUserPriority)
	}
	switch p.Kind {
	case KindDeployment, KindDaemonSet, KindStatefulSet:
	default:
		add("unknown workload kind %q: use one of %s", p.Kind, ValidKinds)
	}

	if msgs := validation.IsDNS1123Subdomain(p.Prototype); len(msgs) > 0 {
		add("invalid prototype name %q: %s; give the name of an existing VirtualMachine", p.Prototype, strings.Join(msgs, "; "))
	}

	if msgs := validation.IsDNS1035Label(p.Name); len(msgs) > 0 {
		add("invalid name %q: %s; pass --name with a short lower-case name such as vmctl-web", p.Name, strings.Join(msgs, "; "))
	} else {
		if p.Kind == KindStatefulSet && len(p.Name) > maxStatefulSetName {
			add("name %q is longer than %d characters, which a StatefulSet's revision label cannot hold; pass a shorter --name", p.Name, maxStatefulSetName)
		}
		if svc := p.Name + vmServiceSuffix; p.Service != nil && len(svc) > validation.DNS1035LabelMaxLength {
			add("service name %q is longer than %d characters; pass a shorter --name", svc, validation.DNS1035LabelMaxLength)
		}
	}

	if msgs := validation.IsDNS1123Label(p.Namespace); len(msgs) > 0 {
		add("invalid namespace %q: %s; pass -n with an existing namespace", p.Namespace, strings.Join(msgs, "; "))
	}
	if p.ProtoNamespace != "" {
		if msgs := validation.IsDNS1123Label(p.ProtoNamespace); len(msgs) > 0 {
			add("invalid prototype namespace %q: %s; pass --proto-namespace with the prototype's namespace", p.ProtoNamespace, strings.Join(msgs, "; "))
		}
	}

	if p.Image == "" || strings.ContainsAny(p.Image, " \t\r\n") {
		add("invalid image %q: pass --image with an image reference such as %s", p.Image, DefaultImage("v1.0.0"))
	}
	if p.Replicas < 0 {
		add("invalid replicas %d: must be 0 or more", p.Replicas)
	}
	if a := p.autoscale(); a != nil {
		if err := a.Validate(); err != nil {
			add("autoscale: %v", err)
		}
	}
	if p.GracePeriodSeconds < MinGracePeriodSeconds {
		add("grace period %ds is too short for the agent to delete its VM: use at least %ds", p.GracePeriodSeconds, MinGracePeriodSeconds)
	}
	if p.MoveAfter < 0 {
		add("invalid --move-after %v: use 0 to never move, or a positive duration such as %v", p.MoveAfter, DefaultMoveAfter)
	}

	if p.Service != nil {
		if msgs := validation.IsValidPortNum(int(p.Service.Port)); len(msgs) > 0 {
			add("invalid service port %d: %s", p.Service.Port, strings.Join(msgs, "; "))
		}
		if err := validateTargetPort(p.Service.TargetPort); err != nil {
			errs = append(errs, err)
		}
	}
	if p.PDBMinAvailable != nil {
		if err := validateMinAvailable(*p.PDBMinAvailable); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, p.validateClaims()...)
	return errors.Join(errs...)
}

// validatePin refuses p without the VM revision its template pins: its
// agents would make no VM. Validate leaves it to Build, as scaffold
// validates its flags before it reads the prototype it takes the revision
// of.
func (p Params) validatePin() error {
	if p.Snapshot == nil || p.RevisionHash == "" {
		return fmt.Errorf("no VM revision of prototype %q to pin, and its agents make no VM without one: "+
			"set Snapshot and RevisionHash to a revision of it (prototype.Pin takes one)", p.Prototype)
	}
	return nil
}

func validateTargetPort(t intstr.IntOrString) error {
	if t.Type == intstr.String {
		if msgs := validation.IsValidPortName(t.StrVal); len(msgs) > 0 {
			return fmt.Errorf("invalid service target port %q: %s", t.StrVal, strings.Join(msgs, "; "))
		}
		return nil
	}
	if t.IntVal == 0 { // zero means "same as the port"
		return nil
	}
	if msgs := validation.IsValidPortNum(int(t.IntVal)); len(msgs) > 0 {
		return fmt.Errorf("invalid service target port %d: %s", t.IntVal, strings.Join(msgs, "; "))
	}
	return nil
}

func validateMinAvailable(m intstr.IntOrString) error {
	if m.Type == intstr.Int {
		if m.IntVal < 0 {
			return fmt.Errorf("invalid PodDisruptionBudget minAvailable %d: must be 0 or more", m.IntVal)
		}
		return nil
	}
	if msgs := validation.IsValidPercent(m.StrVal); len(msgs) > 0 {
		return fmt.Errorf("invalid PodDisruptionBudget minAvailable %q: give a number of Pods or a percentage such as 50%%", m.StrVal)
	}
	if v, err := intstr.GetScaledValueFromIntOrPercent(&m, 100, true); err != nil || v > 100 {
		return fmt.Errorf("invalid PodDisruptionBudget minAvailable %q: a percentage must be between 0%% and 100%%", m.StrVal)
	}
	return nil
}
