package scaffold

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

// Agent container settings.
const (
	probePortName = "probes"
	// nonRootUID is the distroless "nonroot" user.
	nonRootUID int64 = 65532
)

// Prometheus' conventional scrape annotations, which many scrape
// configurations (and Prometheus' own example for Kubernetes) follow.
const (
	annotationScrape     = "prometheus.io/scrape"
	annotationScrapePort = "prometheus.io/port"
	annotationScrapePath = "prometheus.io/path"
	metricsPath          = "/metrics"
)

// scrapeAnnotations point Prometheus at the agent's /metrics, on the probe
// port.
func scrapeAnnotations() map[string]string {
	return map[string]string{
		annotationScrape:     "true",
		annotationScrapePort: strconv.Itoa(int(ProbePort)),
		annotationScrapePath: metricsPath,
	}
}

// StopsOnEvacuation reports whether p's agents stop their VMs when a drain
// asks KubeVirt to evacuate them: a DaemonSet's Pods stay on a drained node
// (kubectl drain --ignore-daemonsets), so nothing else would take the VM off
// it. The Pods of a Deployment or StatefulSet are evicted, as their
// PodDisruptionBudget allows, and their agents delete the VMs then.
func (p Params) StopsOnEvacuation() bool { return p.Kind == KindDaemonSet }

// EvictsOnEvacuation reports whether p's agents evict their own Pod when
// KubeVirt marks their VM for evacuation (--evict-on-evacuation): those
// whose controller replaces an evicted Pod, so that the VM goes with its
// Pod under the PodDisruptionBudget whether a drain or KubeVirt's workload
// updater asked.
func (p Params) EvictsOnEvacuation() bool { return p.Kind != KindDaemonSet }

// EvictsOwnPod reports whether p's agents ever evict their own Pod: to
// move (Moves) or for an evacuation.
func (p Params) EvictsOwnPod() bool { return p.Moves() || p.EvictsOnEvacuation() }

// DeleteTimeout is how long p's agents wait for their VMs to go
// (--delete-timeout): the grace period less a margin, so the agent can
// still log and exit before SIGKILL.
func (p Params) DeleteTimeout() time.Duration {
	return time.Duration(p.GracePeriodSeconds-deleteMarginSeconds) * time.Second
}

// downwardEnv tells the agent who it is, so it never needs to read its Pod.
func downwardEnv() []corev1.EnvVar {
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: path},
		}}
	}
	return []corev1.EnvVar{
		env(contract.EnvPodName, "metadata.name"),
		env(contract.EnvPodNamespace, "metadata.namespace"),
		env(contract.EnvPodUID, "metadata.uid"),
		env(contract.EnvNodeName, "spec.nodeName"),
	}
}

func httpProbe(path string, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path,
			Port: intstr.FromString(probePortName),
		}},
		PeriodSeconds:    period,
		FailureThreshold: 3,
	}
}

func (p Params) podTemplate() corev1.PodTemplateSpec {
	t := p.agentTemplate()
	if p.Placement != nil {
		p.Placement.Apply(&t.Spec)
		t.Annotations[contract.AnnotationPlacement] = p.PlacementKey
	}
	if p.Reserves() {
		podtemplate.Hold(&t, p.Reservation)
	}
	if p.hasLauncherPriorityClass() {
		t.Annotations[contract.AnnotationLauncherPriorityClass] = p.launcherPriorityClassName()
	}
	podtemplate.Pin(&t, p.RevisionHash)
	return t
}

func (p Params) agentTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: p.workloadLabels(), Annotations: scrapeAnnotations()},
		Spec: corev1.PodSpec{
			ServiceAccountName: p.Name,
			// The agent talks to the API server with the projected ServiceAccount
			// token.
			AutomountServiceAccountToken:  ptr.To(true),
			TerminationGracePeriodSeconds: ptr.To(p.GracePeriodSeconds),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(nonRootUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  contract.ContainerName,
				Image: p.Image,
				Args:  p.AgentArgs(),
				Env:   append(append(downwardEnv(), p.requestsEnv()...), p.launcherPriorityEnv()...),
				// /healthz, /readyz and /metrics.
				Ports: []corev1.ContainerPort{{Name: probePortName, ContainerPort: ProbePort}},
				// Ready means the derived VM is ready.
				ReadinessProbe: httpProbe("/readyz", 5),
				LivenessProbe:  httpProbe("/healthz", 10),
				// Its own; podTemplate adds the room its VM needs.
				Resources: podtemplate.AgentResources(nil),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: contract.StateVolume, MountPath: contract.StateMountPath}},
			}},
			// Where the agent records the VM it makes: a restarted agent
			// container reads it there, under a read-only root.
			Volumes: []corev1.Volume{{Name: contract.StateVolume, VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))},
			}}},
		},
	}
}

func (p Params) objectMeta(component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.labels(component)}
}

// workloadMeta is the workload's metadata, which says which revision its
// template pins where `kubectl rollout history` shows it.
func (p Params) workloadMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.workloadLabels(),
		Annotations: map[string]string{podtemplate.AnnotationChangeCause: podtemplate.ChangeCause(p.Snapshot, p.RevisionHash)}}
}

func (p Params) deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: string(KindDeployment)},
		ObjectMeta: p.workloadMeta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: p.replicas(),
			Selector: &metav1.LabelSelector{MatchLabels: p.selectorLabels()},
			Template: p.podTemplate(),
		},
	}
}

func (p Params) daemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: string(KindDaemonSet)},
		ObjectMeta: p.workloadMeta(),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: p.selectorLabels()},
			Template: p.podTemplate(),
		},
	}
}

// statefulSet starts and stops its Pods in parallel: each Pod's VM is
// independent, so ordered startup would only wait for VMs one by one.
func (p Params) statefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: string(KindStatefulSet)},
		ObjectMeta: p.workloadMeta(),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             p.replicas(),
			Selector:                             &metav1.LabelSelector{MatchLabels: p.selectorLabels()},
			Template:                             p.podTemplate(),
			ServiceName:                          p.Name,
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			VolumeClaimTemplates:                 p.volumeClaimTemplates(),
			PersistentVolumeClaimRetentionPolicy: p.claimRetention(),
		},
	}
}

// headlessService is the StatefulSet's governing Service, and it selects
// the VMs, not the agents: the agents give their VMs the Pod's name as
// hostname and this Service as subdomain (--subdomain), so
// <pod>.<service>.<namespace>.svc resolves to the VM's launcher Pod, the
// name the StatefulSet promised the Pod. It needs no ports: DNS names every
// ready VM it selects.
func (p Params) headlessService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: p.objectMeta(ComponentVMs),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{
				contract.LabelPrototype: derive.LabelValue(p.Prototype),
				contract.LabelSubdomain: p.subdomain(),
			},
		},
	}
}
