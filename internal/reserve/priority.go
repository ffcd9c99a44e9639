package reserve

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// PriorityOf returns the priority the API server's Priority admission
// plugin gives vm's launcher Pod and the Pods of its priority class: the
// value of the class the VM's template names, or else of the cluster's
// global default class, or else 0. It needs get (with a class) or list
// (without) on priorityclasses.scheduling.k8s.io.
func PriorityOf(ctx context.Context, c kube.Clients, vm *kubevirtv1.VirtualMachine) (int32, error) {
	classes := c.Kube.SchedulingV1().PriorityClasses()
	if t := vm.Spec.Template; t != nil && t.Spec.PriorityClassName != "" {
		pc, err := classes.Get(ctx, t.Spec.PriorityClassName, metav1.GetOptions{})
		if err != nil {
			return 0, fmt.Errorf("reading the VMs' priority class %s: %w", t.Spec.PriorityClassName, err)
		}
		return pc.Value, nil
	}
	list, err := classes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing priority classes, for the cluster's default: %w", err)
	}
	for _, pc := range list.Items {
		if pc.GlobalDefault {
			return pc.Value, nil
		}
	}
	return 0, nil
}
