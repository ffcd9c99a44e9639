package rollout

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Progress is how far one workload's rollout has come.
type Progress struct {
	// Message says it in one line, as kubectl rollout status does.
	Message string
	Done    bool
	// Err is a rollout that cannot finish (a deployment past its progress
	// deadline, a workload that does not roll out on its own).
	Err error
}

// Observe reports w's progress: first the workload's own, as `kubectl
// rollout status` reports it, then its VMs'. The rollout is done when the
// workload's is and every Pod of the current revision that is not going
// away is paired with a ready VM derived from generation, the prototype's
// current one (a negative generation: the prototype is missing). pods are
// w's Pods; vms the VMs derived from w's prototype.
func Observe(w Workload, v Version, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine) Progress {
	generation := v.Generation
	msg, done, err := workloadStatus(w)
	if err != nil || !done {
		return Progress{Message: msg, Err: err}
	}
	proto := w.Prototype()
	if generation < 0 {
		return Progress{Message: fmt.Sprintf("Waiting for prototype %s: not found", proto)}
	}
	byPod := vmsByPod(vms, w)
	var want, ok int
	var older []string
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || !expectsUpdate(w, pod) {
			continue
		}
		want++
		vm := byPod[keyOf(pod)]
		switch {
		case vm == nil || vm.DeletionTimestamp != nil:
		case !v.DerivesFrom(vm):
			older = append(older, strconv.FormatInt(derive.OriginOf(vm).PrototypeGeneration, 10))
		case vm.Status.Ready:
			ok++
		}
	}
	kind := strings.TrimSuffix(w.Resource().Resource, "s")
	if ok < want {
		m := fmt.Sprintf("Waiting for the VMs of %s %q: %d of %d ready and derived from prototype %s generation %d",
			kind, w.Meta().GetName(), ok, want, proto, generation)
		if len(older) > 0 {
			m += fmt.Sprintf(" (%d from generation %s: run kubectl vmctl rollout restart %s)", len(older), strings.Join(dedupe(older), ", "), proto.Name)
		}
		return Progress{Message: m + "..."}
	}
	return Progress{Message: fmt.Sprintf("%s %q successfully rolled out: %d VMs ready and derived from prototype %s generation %d",
		kind, w.Meta().GetName(), ok, proto, generation), Done: true}
}

// expectsUpdate reports whether the rollout replaces pod: every Pod, but
// for a StatefulSet with a partition only those at or above it.
func expectsUpdate(w Workload, pod *corev1.Pod) bool {
	sts, ok := w.Object.(*appsv1.StatefulSet)
	if !ok || sts.Spec.UpdateStrategy.RollingUpdate == nil || sts.Spec.UpdateStrategy.RollingUpdate.Partition == nil {
		return true
	}
	ordinal, err := strconv.Atoi(pod.Labels[appsv1.PodIndexLabel])
	if err != nil {
		i := strings.LastIndexByte(pod.Name, '-')
		if ordinal, err = strconv.Atoi(pod.Name[i+1:]); err != nil {
			return true
		}
	}
	return int32(ordinal) >= *sts.Spec.UpdateStrategy.RollingUpdate.Partition
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// workloadStatus is kubectl rollout status's verdict on the workload itself,
// as k8s.io/kubectl/pkg/polymorphichelpers words it, without its trailing
// newline. That package is not imported: it links kubectl's describe
// package and more, 0.7 MB in both kubectl-vmctl and the agent's binary
// (measured), for these few lines.
func workloadStatus(w Workload) (string, bool, error) {
	switch o := w.Object.(type) {
	case *appsv1.Deployment:
		return deploymentStatus(o)
	case *appsv1.StatefulSet:
		return statefulSetStatus(o)
	case *appsv1.DaemonSet:
		return daemonSetStatus(o)
	}
	return "", false, fmt.Errorf("%T is no workload", w.Object)
}

// timedOutReason is the Progressing condition's reason once a Deployment
// exceeded its progressDeadlineSeconds.
const timedOutReason = "ProgressDeadlineExceeded"

func deploymentStatus(d *appsv1.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == timedOutReason {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	if d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas {
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, d.Status.UpdatedReplicas, *d.Spec.Replicas), false, nil
	}
	if d.Status.Replicas > d.Status.UpdatedReplicas {
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, d.Status.Replicas-d.Status.UpdatedReplicas), false, nil
	}
	if d.Status.AvailableReplicas < d.Status.UpdatedReplicas {
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
}

func daemonSetStatus(d *appsv1.DaemonSet) (string, bool, error) {
	if d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type, and daemon set %q is %s", appsv1.RollingUpdateDaemonSetStrategyType, d.Name, d.Spec.UpdateStrategy.Type)
	}
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for daemon set spec update to be observed...", false, nil
	}
	if d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled {
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled), false, nil
	}
	if d.Status.NumberAvailable < d.Status.DesiredNumberScheduled {
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out", d.Name), true, nil
}

func statefulSetStatus(s *appsv1.StatefulSet) (string, bool, error) {
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type, and statefulset %q is %s", appsv1.RollingUpdateStatefulSetStrategyType, s.Name, s.Spec.UpdateStrategy.Type)
	}
	if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
		return "Waiting for statefulset spec update to be observed...", false, nil
	}
	if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
		return fmt.Sprintf("Waiting for %d pods to be ready...", *s.Spec.Replicas-s.Status.ReadyReplicas), false, nil
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if s.Spec.Replicas != nil && ru.Partition != nil && s.Status.UpdatedReplicas < *s.Spec.Replicas-*ru.Partition {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...",
				s.Status.UpdatedReplicas, *s.Spec.Replicas-*ru.Partition), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", s.Status.UpdatedReplicas), true, nil
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", s.Status.UpdatedReplicas, s.Status.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", s.Status.CurrentReplicas, s.Status.CurrentRevision), true, nil
}
