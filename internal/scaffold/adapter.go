package scaffold

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// MetricsAdapter lays out vmctl-metrics-adapter: the custom metrics API
// server of the guests' CPU (package guestmetrics), as metrics-server's
// and prometheus-adapter's manifests lay theirs out.
type MetricsAdapter struct {
	// Namespace is where it runs.
	Namespace string
	// Image is the vmctl image, whose /vmctl-metrics-adapter it runs.
	Image string
	// CABundle, when set, is the CA that signed the certificate in the
	// Secret AdapterTLSSecret (tls.crt, tls.key), which the adapter then
	// serves and the aggregator checks. Empty, the adapter makes itself
	// a certificate at start and the APIServices skip its check, as
	// metrics-server's default manifests do.
	CABundle []byte
}

// The names of what MetricsAdapter lays out.
const (
	AdapterName = "vmctl-metrics-adapter"
	// AdapterTLSSecret holds the adapter's serving certificate, when the
	// APIServices check it (MetricsAdapter.CABundle).
	AdapterTLSSecret = AdapterName + "-tls"
	adapterPort      = 6443
	customMetrics    = "custom.metrics.k8s.io"
)

// Objects are the adapter's ServiceAccount, its read-only RBAC, its
// Deployment and Service, and the APIServices of custom.metrics.k8s.io
// v1beta2 and v1beta1.
func (m MetricsAdapter) Objects() []runtime.Object {
	objs := m.RBAC()
	return append(objs, m.service(), m.deployment(), m.apiService("v1beta2", 200), m.apiService("v1beta1", 100))
}

// RBAC is what the adapter's ServiceAccount may do, all of it reading:
// watch agent Pods and derived VMIs, list metrics-server's Pod metrics,
// and, as every aggregated API server must, delegate the authentication
// and authorization of its callers (system:auth-delegator) and read how the
// API server authenticates itself to it (extension-apiserver-authentication-reader).
// No agent's token gains anything.
func (m MetricsAdapter) RBAC() []runtime.Object {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: AdapterName, Namespace: m.Namespace}}
	return []runtime.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: m.meta(AdapterName, m.Namespace),
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: m.meta(AdapterName, ""),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{kubevirtGroup}, Resources: []string{virtualMachineInstances}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"list"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: m.meta(AdapterName, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AdapterName},
			Subjects:   subject,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: m.meta(AdapterName+":system:auth-delegator", ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   subject,
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: m.meta(AdapterName+":auth-reader", metav1.NamespaceSystem),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   subject,
		},
	}
}

func (m MetricsAdapter) meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
		contract.LabelName: AdapterName, contract.LabelManagedBy: contract.ManagedBy,
	}}
}

func (m MetricsAdapter) selector() map[string]string {
	return map[string]string{contract.LabelName: AdapterName}
}

func (m MetricsAdapter) service() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: m.meta(AdapterName, m.Namespace),
		Spec: corev1.ServiceSpec{
			Selector: m.selector(),
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
		},
	}
}

// apiService registers the adapter's version of custom.metrics.k8s.io.
func (m MetricsAdapter) apiService(version string, priority int32) *apiregistrationv1.APIService {
	s := &apiregistrationv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiregistrationv1.SchemeGroupVersion.String(), Kind: "APIService"},
		ObjectMeta: m.meta(version+"."+customMetrics, ""),
		Spec: apiregistrationv1.APIServiceSpec{
			Service:              &apiregistrationv1.ServiceReference{Name: AdapterName, Namespace: m.Namespace, Port: ptr.To[int32](443)},
			Group:                customMetrics,
			Version:              version,
			GroupPriorityMinimum: 100,
			VersionPriority:      priority,
		},
	}
	if len(m.CABundle) > 0 {
		s.Spec.CABundle = m.CABundle
	} else {
		s.Spec.InsecureSkipTLSVerify = true
	}
	return s
}

// Args are the adapter's arguments: where it serves, and the certificate
// it serves (its own, or the Secret's).
func (m MetricsAdapter) Args() []string {
	args := []string{"--secure-port=6443", "--cert-dir=/tmp/certs"}
	if len(m.CABundle) > 0 {
		args = append(args, "--tls-cert-file=/etc/vmctl-metrics-adapter/tls.crt", "--tls-private-key-file=/etc/vmctl-metrics-adapter/tls.key")
	}
	return args
}

func (m MetricsAdapter) deployment() *appsv1.Deployment {
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	if len(m.CABundle) > 0 {
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: AdapterTLSSecret}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/vmctl-metrics-adapter", ReadOnly: true})
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: m.meta(AdapterName, m.Namespace),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: m.selector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: m.selector()},
				Spec: corev1.PodSpec{
					ServiceAccountName: AdapterName,
					PriorityClassName:  "system-cluster-critical",
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(nonRootUID), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:    "adapter",
						Image:   m.Image,
						Command: []string{"/" + AdapterName},
						Args:    m.Args(),
						Ports:   []corev1.ContainerPort{{Name: "https", ContainerPort: adapterPort}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						LivenessProbe:  probe("/livez"),
						ReadinessProbe: probe("/readyz"),
						VolumeMounts:   mounts,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: volumes,
				},
			},
		},
	}
}
