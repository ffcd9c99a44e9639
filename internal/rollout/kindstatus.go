package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// The kinds' status functions are kubectl rollout status's verdict on a
// workload itself, as k8s.io/kubectl/pkg/polymorphichelpers's status
// viewers word it, without their trailing newline. That package is not
// imported: it links kubectl's describe package and more, 0.7 MB in both
// kubectl-vmctl and the agent's binary (measured), for these few lines.

// timedOutReason is the Progressing condition's reason once a Deployment
// exceeded its progressDeadlineSeconds.
const timedOutReason = "ProgressDeadlineExceeded"

func deploymentStatus(d *appsv1.Deployment) Progress {
	if d.Generation > d.Status.ObservedGeneration {
		return Progress{Message: "Waiting for deployment spec update to be observed..."}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == timedOutReason {
			return Progress{Err: fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)}
		}
	}
	if d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas {
		return Progress{Message: fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, d.Status.UpdatedReplicas, *d.Spec.Replicas)}
	}
	if d.Status.Replicas > d.Status.UpdatedReplicas {
		return Progress{Message: fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, d.Status.Replicas-d.Status.UpdatedReplicas)}
	}
	if d.Status.AvailableReplicas < d.Status.UpdatedReplicas {
		return Progress{Message: fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)}
	}
	return Progress{Message: fmt.Sprintf("deployment %q successfully rolled out", d.Name), Done: true}
}

func daemonSetStatus(d *appsv1.DaemonSet) Progress {
	if d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return Progress{Done: true, Err: fmt.Errorf("rollout status is only available for %s strategy type, and daemon set %q is %s", appsv1.RollingUpdateDaemonSetStrategyType, d.Name, d.Spec.UpdateStrategy.Type)}
	}
	if d.Generation > d.Status.ObservedGeneration {
		return Progress{Message: "Waiting for daemon set spec update to be observed..."}
	}
	if d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled {
		return Progress{Message: fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled)}
	}
	if d.Status.NumberAvailable < d.Status.DesiredNumberScheduled {
		return Progress{Message: fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)}
	}
	return Progress{Message: fmt.Sprintf("daemon set %q successfully rolled out", d.Name), Done: true}
}

func statefulSetStatus(s *appsv1.StatefulSet) Progress {
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return Progress{Done: true, Err: fmt.Errorf("rollout status is only available for %s strategy type, and statefulset %q is %s", appsv1.RollingUpdateStatefulSetStrategyType, s.Name, s.Spec.UpdateStrategy.Type)}
	}
	if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
		return Progress{Message: "Waiting for statefulset spec update to be observed..."}
	}
	if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
		return Progress{Message: fmt.Sprintf("Waiting for %d pods to be ready...", *s.Spec.Replicas-s.Status.ReadyReplicas)}
	}
	// kubectl calls any rollout with a RollingUpdate block partitioned, with
	// or without a partition in it (the API server defaults one to 0).
	if s.Spec.UpdateStrategy.RollingUpdate != nil {
		if p := statefulSetPartition(s); s.Spec.Replicas != nil && p != nil && s.Status.UpdatedReplicas < *s.Spec.Replicas-*p {
			return Progress{Message: fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...",
				s.Status.UpdatedReplicas, *s.Spec.Replicas-*p)}
		}
		return Progress{Message: fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", s.Status.UpdatedReplicas), Done: true}
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return Progress{Message: fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", s.Status.UpdatedReplicas, s.Status.UpdateRevision)}
	}
	return Progress{Message: fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", s.Status.CurrentReplicas, s.Status.CurrentRevision), Done: true}
}
