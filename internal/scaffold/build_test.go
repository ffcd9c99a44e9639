package scaffold

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// summary lists objs as "Kind namespace/name", in order.
func summary(t testing.TB, objs []runtime.Object) []string {
	t.Helper()
	var out []string
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		gvk := obj.GetObjectKind().GroupVersionKind()
		out = append(out, fmt.Sprintf("%s %s/%s", gvk.Kind, m.GetNamespace(), m.GetName()))
	}
	return out
}

// find returns the only object of type T named name in objs.
func find[T runtime.Object](t testing.TB, objs []runtime.Object, namespace, name string) T {
	t.Helper()
	var found []T
	for _, obj := range objs {
		m, _ := meta.Accessor(obj)
		if o, ok := obj.(T); ok && m.GetName() == name && m.GetNamespace() == namespace {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("found %d %T named %s/%s in %q, want 1", len(found), zero, namespace, name, summary(t, objs))
	}
	return found[0]
}

func mustBuild(t testing.TB, p Params) []runtime.Object {
	t.Helper()
	objs, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestBuildObjects(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Params)
		want   []string
	}{
		{
			name:   "deployment",
			change: func(*Params) {},
			want: []string{
				"ServiceAccount vms/vmctl-testvm",
				"Role vms/vmctl-testvm",
				"RoleBinding vms/vmctl-testvm",
				"VMRevisionStore vms/vmctl-testvm-vm-revisions",
				"Deployment vms/vmctl-testvm",
			},
		},
		{
			name:   "daemonset",
			change: func(p *Params) { p.Kind = KindDaemonSet },
			want: []string{
				"ServiceAccount vms/vmctl-testvm",
				"Role vms/vmctl-testvm",
				"RoleBinding vms/vmctl-testvm",
				"VMRevisionStore vms/vmctl-testvm-vm-revisions",
				"DaemonSet vms/vmctl-testvm",
			},
		},
		{
			name:   "statefulset gets its headless service",
			change: func(p *Params) { p.Kind = KindStatefulSet },
			want: []string{
				"ServiceAccount vms/vmctl-testvm",
				"Role vms/vmctl-testvm",
				"RoleBinding vms/vmctl-testvm",
				"VMRevisionStore vms/vmctl-testvm-vm-revisions",
				"Service vms/vmctl-testvm",
				"StatefulSet vms/vmctl-testvm",
			},
		},
		{
			name:   "prototype elsewhere: nothing there, as the agents never read it",
			change: func(p *Params) { p.ProtoNamespace = "protos" },
			want: []string{
				"ServiceAccount vms/vmctl-testvm",
				"Role vms/vmctl-testvm",
				"RoleBinding vms/vmctl-testvm",
				"VMRevisionStore vms/vmctl-testvm-vm-revisions",
				"Deployment vms/vmctl-testvm",
			},
		},
		{
			name: "every extra",
			change: func(p *Params) {
				p.Kind = KindStatefulSet
				p.Name = "web"
				p.Service = &ServicePort{Port: 80}
				m := intstr.FromInt32(1)
				p.PDBMinAvailable = &m
				p.AdmissionPolicy = true
				p.PodMonitor = true
			},
			want: []string{
				"ServiceAccount vms/web",
				"Role vms/web",
				"RoleBinding vms/web",
				"VMRevisionStore vms/web-vm-revisions",
				"ValidatingAdmissionPolicy /web.vms",
				"ValidatingAdmissionPolicyBinding /web.vms",
				"ValidatingAdmissionPolicy /web-guard.vms",
				"ValidatingAdmissionPolicyBinding /web-guard.vms",
				"ValidatingAdmissionPolicy /web-events.vms",
				"ValidatingAdmissionPolicyBinding /web-events.vms",
				"ValidatingAdmissionPolicy /web-pod.vms",
				"ValidatingAdmissionPolicyBinding /web-pod.vms",
				"Service vms/web",
				"StatefulSet vms/web",
				"Service vms/web-vms",
				"PodDisruptionBudget vms/web",
				"PodMonitor vms/web",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			tt.change(&p)
			objs := mustBuild(t, p)
			if diff := cmp.Diff(tt.want, summary(t, objs)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			for _, obj := range objs {
				gvk := obj.GetObjectKind().GroupVersionKind()
				if gvk.Version == "" || gvk.Kind == "" {
					t.Errorf("%T has no apiVersion or kind: %v", obj, gvk)
				}
			}
		})
	}
}

// TestBuildNeedsARevision: Params that pin no VM revision build nothing,
// as their agents would make no VM; Validate accepts them, as scaffold
// validates its flags before it reads the prototype it pins.
func TestBuildNeedsARevision(t *testing.T) {
	for name, change := range map[string]func(*Params){
		"no revision": func(p *Params) { p.Snapshot = nil },
		"no hash":     func(p *Params) { p.RevisionHash = "" },
	} {
		p := validParams(KindDeployment)
		change(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", name, err)
		}
		if _, err := Build(p); err == nil || !strings.Contains(err.Error(), `no VM revision of prototype "testvm" to pin`) {
			t.Errorf("%s: Build() = %v, want it refused for the revision", name, err)
		}
	}
}

// The rules the agent needs, written out rather than taken from the code
// under test.
func wantRules() (store, vms, events rbacv1.PolicyRule) {
	store = rbacv1.PolicyRule{
		APIGroups: []string{"vmctl.kubevirt.io"}, Resources: []string{"vmrevisionstores"},
		ResourceNames: []string{"vmctl-testvm-vm-revisions"}, Verbs: []string{"get", "list", "watch"},
	}
	vms = rbacv1.PolicyRule{
		APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"},
		Verbs: []string{"create", "get", "list", "watch", "delete"},
	}
	events = rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"},
	}
	return store, vms, events
}

func wantSubjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vmctl-testvm", Namespace: "vms"}}
}

func TestRBAC(t *testing.T) {
	wantStoreRule, wantVMRule, wantEventsRule := wantRules()
	objs := mustBuild(t, validParams(KindDaemonSet))
	role := find[*rbacv1.Role](t, objs, "vms", "vmctl-testvm")
	// A DaemonSet's agents stop their VMs for a drain through the VMI.
	wantVMIRule := rbacv1.PolicyRule{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstances"}, Verbs: []string{"get", "list", "watch", "delete"}}
	if diff := cmp.Diff([]rbacv1.PolicyRule{wantStoreRule, wantVMRule, wantEventsRule, wantVMIRule}, role.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// A Deployment's watch theirs, and evict their own Pod when KubeVirt
	// evacuates their VM.
	deployRole := find[*rbacv1.Role](t, mustBuild(t, validParams(KindDeployment)), "vms", "vmctl-testvm")
	wantVMIRule.Verbs = []string{"get", "list", "watch"}
	evictRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}
	if diff := cmp.Diff([]rbacv1.PolicyRule{wantStoreRule, wantVMRule, wantEventsRule, wantVMIRule, evictRule}, deployRole.Rules); diff != "" {
		t.Errorf("a Deployment's rules (-want +got):\n%s", diff)
	}
	rb := find[*rbacv1.RoleBinding](t, objs, "vms", "vmctl-testvm")
	if diff := cmp.Diff(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "vmctl-testvm"}, rb.RoleRef); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSubjects(), rb.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}

// TestRBACPrototypeElsewhere: the agents read their revision store, never
// the prototype, so its namespace gets no Role, and theirs the same one as
// beside the prototype.
func TestRBACPrototypeElsewhere(t *testing.T) {
	p := validParams(KindDeployment)
	p.ProtoNamespace = "protos"
	objs := mustBuild(t, p)
	for _, obj := range objs {
		switch obj.(type) {
		case *rbacv1.Role, *rbacv1.RoleBinding:
			if m, _ := meta.Accessor(obj); m.GetNamespace() != "vms" {
				t.Errorf("%T %s/%s outside the workload's namespace", obj, m.GetNamespace(), m.GetName())
			}
		}
	}
	same := find[*rbacv1.Role](t, mustBuild(t, validParams(KindDeployment)), "vms", "vmctl-testvm")
	if diff := cmp.Diff(same.Rules, find[*rbacv1.Role](t, objs, "vms", "vmctl-testvm").Rules); diff != "" {
		t.Errorf("rules with the prototype elsewhere (-beside it +elsewhere):\n%s", diff)
	}
}

// TestRBACGrantsNoPods: without a reservation, an agent touches no Pod but
// its own, by eviction.
func TestRBACGrantsNoPods(t *testing.T) {
	p := validParams(KindStatefulSet)
	p.ProtoNamespace = "protos"
	p.AdmissionPolicy = true
	for _, obj := range mustBuild(t, p) {
		role, ok := obj.(*rbacv1.Role)
		if !ok {
			continue
		}
		for _, r := range role.Rules {
			if !slices.ContainsFunc([][]string{{"vmrevisionstores"}, {"virtualmachines"}, {"virtualmachineinstances"}, {"events"}, {"pods/eviction"}},
				func(want []string) bool { return cmp.Equal(r.Resources, want) }) {
				t.Errorf("Role %s/%s grants %v on %v; the agent needs only its revision store, virtualmachines, virtualmachineinstances, events and pods/eviction", role.Namespace, role.Name, r.Verbs, r.Resources)
			}
			// list is granted where watch is, which reads as much (a watch
			// can stream its initial list); the reflector falls back to it.
			for _, v := range r.Verbs {
				if v == "*" || v == "update" || v == "deletecollection" || (v == "list" && !slices.Contains(r.Verbs, "watch")) {
					t.Errorf("Role %s/%s grants %q on %v, which the agent never needs", role.Namespace, role.Name, v, r.Resources)
				}
			}
		}
	}
}

func TestAgentArgs(t *testing.T) {
	const stateDir, store, evict = "--state-dir=/run/vmctl", "--vm-revisions=vmctl-testvm-vm-revisions", "--evict-on-evacuation"
	tests := []struct {
		name   string
		change func(*Params)
		want   []string
	}{
		{name: "defaults add only the state directory, the revision store and the evacuation", change: func(*Params) {}, want: []string{"testvm", stateDir, store, evict}},
		{name: "same proto namespace", change: func(p *Params) { p.ProtoNamespace = "vms" }, want: []string{"testvm", stateDir, store, evict}},
		{name: "proto namespace", change: func(p *Params) { p.ProtoNamespace = "protos" }, want: []string{"testvm", stateDir, store, "--proto-namespace=protos", evict}},
		{name: "shared volumes", change: func(p *Params) { p.AllowSharedVolumes = true }, want: []string{"testvm", stateDir, store, "--allow-shared-volumes", evict}},
		{name: "longer grace", change: func(p *Params) { p.GracePeriodSeconds = 300 }, want: []string{"testvm", stateDir, store, "--delete-timeout=4m50s", evict}},
		{name: "shortest grace", change: func(p *Params) { p.GracePeriodSeconds = 15 }, want: []string{"testvm", stateDir, store, "--delete-timeout=5s", evict}},
		{name: "everything", change: func(p *Params) {
			p.ProtoNamespace = "protos"
			p.AllowSharedVolumes = true
			p.GracePeriodSeconds = 60
		}, want: []string{"testvm", stateDir, store, "--proto-namespace=protos", "--allow-shared-volumes", "--delete-timeout=50s", evict}},
		{name: "a statefulset names its VMs' subdomain", change: func(p *Params) { p.Kind = KindStatefulSet; p.Name = "web" },
			want: []string{"testvm", stateDir, "--vm-revisions=web-vm-revisions", "--subdomain=web", evict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			tt.change(&p)
			if diff := cmp.Diff(tt.want, p.AgentArgs()); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if p.Kind != KindDeployment {
				return
			}
			d := find[*appsv1.Deployment](t, mustBuild(t, p), "vms", "vmctl-testvm")
			if diff := cmp.Diff(tt.want, d.Spec.Template.Spec.Containers[0].Args); diff != "" {
				t.Errorf("Deployment args (-want +got):\n%s", diff)
			}
			// A DaemonSet's agents stop their VMs for an evacuation instead,
			// as a drain leaves their Pods in place.
			p.Kind = KindDaemonSet
			ds := find[*appsv1.DaemonSet](t, mustBuild(t, p), "vms", "vmctl-testvm")
			if diff := cmp.Diff(append(slices.Clone(tt.want[:len(tt.want)-1]), "--stop-on-evacuation"), ds.Spec.Template.Spec.Containers[0].Args); diff != "" {
				t.Errorf("DaemonSet args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkloads(t *testing.T) {
	wantSelector := map[string]string{"app.kubernetes.io/name": "vmctl", "app.kubernetes.io/instance": "vmctl-testvm"}
	// The prototype's label lets `rollout` find the workloads; it is not
	// the VMs' vmctl.kubevirt.io/prototype, which Services select.
	wantLabels := map[string]string{
		"app.kubernetes.io/name":            "vmctl",
		"app.kubernetes.io/instance":        "vmctl-testvm",
		"app.kubernetes.io/component":       "agent",
		"app.kubernetes.io/managed-by":      "kubectl-vmctl",
		"app.kubernetes.io/version":         "v1.2.3",
		"vmctl.kubevirt.io/agent-prototype": "testvm",
	}

	p := validParams(KindDeployment)
	p.Replicas = 3
	deploy := find[*appsv1.Deployment](t, mustBuild(t, p), "vms", "vmctl-testvm")
	if deploy.Spec.Replicas == nil || *deploy.Spec.Replicas != 3 {
		t.Errorf("deployment replicas = %v, want 3", deploy.Spec.Replicas)
	}
	checkPodTemplate(t, "deployment", deploy.Spec.Template)

	p.Kind = KindStatefulSet
	objs := mustBuild(t, p)
	sts := find[*appsv1.StatefulSet](t, objs, "vms", "vmctl-testvm")
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("statefulset replicas = %v, want 3", sts.Spec.Replicas)
	}
	if sts.Spec.ServiceName != "vmctl-testvm" || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("statefulset serviceName %q, podManagementPolicy %q; want vmctl-testvm, Parallel", sts.Spec.ServiceName, sts.Spec.PodManagementPolicy)
	}
	checkPodTemplate(t, "statefulset", sts.Spec.Template)
	headless := find[*corev1.Service](t, objs, "vms", "vmctl-testvm")
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || len(headless.Spec.Ports) != 0 {
		t.Errorf("governing service clusterIP = %q, ports %v; want None and no ports", headless.Spec.ClusterIP, headless.Spec.Ports)
	}
	// It selects the VMs' launcher Pods (by the labels derive puts on the
	// VMI template with --subdomain), never the agents, so each Pod's DNS
	// name is its VM's.
	wantVMSelector := map[string]string{"vmctl.kubevirt.io/prototype": "testvm", "vmctl.kubevirt.io/subdomain": "vmctl-testvm"}
	if diff := cmp.Diff(wantVMSelector, headless.Spec.Selector); diff != "" {
		t.Errorf("governing service selector (-want +got):\n%s", diff)
	}
	if args := sts.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--subdomain=vmctl-testvm") {
		t.Errorf("statefulset agent args %q lack --subdomain=vmctl-testvm", args)
	}
	if headless.Labels["app.kubernetes.io/component"] != "vms" {
		t.Errorf("governing service component = %q, want vms", headless.Labels["app.kubernetes.io/component"])
	}

	p.Kind = KindDaemonSet
	ds := find[*appsv1.DaemonSet](t, mustBuild(t, p), "vms", "vmctl-testvm")
	checkPodTemplate(t, "daemonset", ds.Spec.Template)

	for _, w := range []struct {
		kind     string
		labels   map[string]string
		selector map[string]string
	}{
		{"deployment", deploy.Labels, deploy.Spec.Selector.MatchLabels},
		{"statefulset", sts.Labels, sts.Spec.Selector.MatchLabels},
		{"daemonset", ds.Labels, ds.Spec.Selector.MatchLabels},
	} {
		if diff := cmp.Diff(wantLabels, w.labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", w.kind, diff)
		}
		if diff := cmp.Diff(wantSelector, w.selector); diff != "" {
			t.Errorf("%s selector (-want +got):\n%s", w.kind, diff)
		}
	}
	if diff := cmp.Diff(wantLabels, ds.Spec.Template.Labels); diff != "" {
		t.Errorf("pod template labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics",
		"vmctl.kubevirt.io/vm-revision": testRevisionHash}
	for kind, tmpl := range map[string]corev1.PodTemplateSpec{"deployment": deploy.Spec.Template, "statefulset": sts.Spec.Template, "daemonset": ds.Spec.Template} {
		if diff := cmp.Diff(wantAnnotations, tmpl.Annotations); diff != "" {
			t.Errorf("%s pod template annotations (-want +got):\n%s", kind, diff)
		}
	}
	for kind, args := range map[string][]string{"deployment": deploy.Spec.Template.Spec.Containers[0].Args, "daemonset": ds.Spec.Template.Spec.Containers[0].Args} {
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--subdomain") }) {
			t.Errorf("%s agent args %q: Pod names that change with every Pod make no stable DNS names", kind, args)
		}
	}
}

func TestWorkloadLabelLongPrototype(t *testing.T) {
	p := validParams(KindDeployment)
	p.Prototype = strings.Repeat("p", 80)
	deploy := find[*appsv1.Deployment](t, mustBuild(t, p), "vms", "vmctl-testvm")
	for what, l := range map[string]map[string]string{"labels": deploy.Labels, "pod template labels": deploy.Spec.Template.Labels} {
		if got := l["vmctl.kubevirt.io/agent-prototype"]; got != derive.LabelValue(p.Prototype) || len(got) > 63 {
			t.Errorf("%s: vmctl.kubevirt.io/agent-prototype = %q, want derive.LabelValue of the name", what, got)
		}
	}
}

func TestPodMonitor(t *testing.T) {
	p := validParams(KindDaemonSet)
	if s := summary(t, mustBuild(t, p)); slices.ContainsFunc(s, func(o string) bool { return strings.HasPrefix(o, "PodMonitor") }) {
		t.Errorf("a PodMonitor without --pod-monitor: %q", s)
	}
	p.PodMonitor = true
	objs := mustBuild(t, p)
	var buf strings.Builder
	if err := WriteYAML(&buf, objs[len(objs)-1:]); err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  labels:
    app.kubernetes.io/component: agent
    app.kubernetes.io/instance: vmctl-testvm
    app.kubernetes.io/managed-by: kubectl-vmctl
    app.kubernetes.io/name: vmctl
    app.kubernetes.io/version: v1.2.3
  name: vmctl-testvm
  namespace: vms
spec:
  podMetricsEndpoints:
  - path: /metrics
    port: probes
  selector:
    matchLabels:
      app.kubernetes.io/instance: vmctl-testvm
      app.kubernetes.io/name: vmctl
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("PodMonitor (-want +got):\n%s", diff)
	}
}

func checkPodTemplate(t *testing.T, kind string, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	spec := tmpl.Spec
	if spec.ServiceAccountName != "vmctl-testvm" {
		t.Errorf("%s: serviceAccountName = %q, want vmctl-testvm", kind, spec.ServiceAccountName)
	}
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken must be true: the agent calls the API server", kind)
	}
	if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 180 {
		t.Errorf("%s: terminationGracePeriodSeconds = %v, want 180", kind, spec.TerminationGracePeriodSeconds)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext = %+v, want runAsNonRoot, uid 65532, RuntimeDefault seccomp", kind, psc)
	}
	if len(spec.Containers) != 1 || len(spec.Volumes) != 1 {
		t.Fatalf("%s: %d containers and %d volumes, want 1 and the state volume", kind, len(spec.Containers), len(spec.Volumes))
	}
	// The agent's record of its VM lives as long as the Pod, under a
	// read-only root.
	if v := spec.Volumes[0]; v.Name != "vmctl-state" || v.EmptyDir == nil {
		t.Errorf("%s: volume %+v, want the emptyDir vmctl-state", kind, v)
	}
	c := spec.Containers[0]
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "vmctl-state", MountPath: "/run/vmctl"}}, c.VolumeMounts); diff != "" {
		t.Errorf("%s: volume mounts (-want +got):\n%s", kind, diff)
	}
	if c.Name != "agent" || c.Image != "example.com/vmctl:test" {
		t.Errorf("%s: container %q image %q, want agent, example.com/vmctl:test", kind, c.Name, c.Image)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.ValueFrom.FieldRef.FieldPath)
	}
	wantEnv := []string{"POD_NAME=metadata.name", "POD_NAMESPACE=metadata.namespace", "POD_UID=metadata.uid", "NODE_NAME=spec.nodeName",
		"VMCTL_VM_REVISION=metadata.annotations['vmctl.kubevirt.io/vm-revision']"}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("%s: env (-want +got):\n%s", kind, diff)
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "probes", ContainerPort: 8080}}, c.Ports); diff != "" {
		t.Errorf("%s: ports (-want +got):\n%s", kind, diff)
	}
	for name, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port != intstr.FromString("probes") {
			t.Errorf("%s: probe for %s = %+v, want httpGet %s on port probes", kind, name, probe, name)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container securityContext = %+v, want no privilege escalation, read-only root, drop ALL", kind, sc)
	}
	if c.Resources.Requests.Cpu().String() != "10m" || c.Resources.Limits.Memory().String() != "64Mi" {
		t.Errorf("%s: resources = %v", kind, c.Resources)
	}
}

func TestVMService(t *testing.T) {
	tests := []struct {
		name      string
		prototype string
		port      ServicePort
		want      corev1.ServicePort
	}{
		{name: "port only", prototype: "testvm", port: ServicePort{Port: 22},
			want: corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 22, TargetPort: intstr.FromInt32(22)}},
		{name: "target port", prototype: "testvm", port: ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)},
			want: corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		{name: "long prototype", prototype: strings.Repeat("p", 80), port: ServicePort{Port: 80, TargetPort: intstr.FromString("http")},
			want: corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			p.Prototype = tt.prototype
			p.Name = "web"
			p.Service = &tt.port
			svc := find[*corev1.Service](t, mustBuild(t, p), "vms", "web-vms")
			// The launcher Pods carry the prototype label from the VM template;
			// the agent Pods carry none, so they never become endpoints.
			wantSelector := map[string]string{"vmctl.kubevirt.io/prototype": derive.LabelValue(tt.prototype)}
			if diff := cmp.Diff(wantSelector, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if len(tt.prototype) > 63 && svc.Spec.Selector["vmctl.kubevirt.io/prototype"] == tt.prototype {
				t.Errorf("selector holds the raw prototype name, which is no valid label value")
			}
			if diff := cmp.Diff([]corev1.ServicePort{tt.want}, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if svc.Labels["app.kubernetes.io/component"] != "vms" {
				t.Errorf("component label = %q, want vms", svc.Labels["app.kubernetes.io/component"])
			}
		})
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	for _, in := range []string{"2", "50%"} {
		t.Run(in, func(t *testing.T) {
			p := validParams(KindStatefulSet)
			m := intstr.Parse(in)
			p.PDBMinAvailable = &m
			pdb := find[*policyv1.PodDisruptionBudget](t, mustBuild(t, p), "vms", "vmctl-testvm")
			if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != m || pdb.Spec.MaxUnavailable != nil {
				t.Errorf("minAvailable %v maxUnavailable %v, want %v and none", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable, m)
			}
			want := map[string]string{"app.kubernetes.io/name": "vmctl", "app.kubernetes.io/instance": "vmctl-testvm"}
			if diff := cmp.Diff(want, pdb.Spec.Selector.MatchLabels); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmissionPolicy(t *testing.T) {
	p := validParams(KindDeployment)
	p.AdmissionPolicy = true
	objs := mustBuild(t, p)
	vap := find[*admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, "", "vmctl-testvm.vms")
	vapb := find[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, objs, "", "vmctl-testvm.vms")

	// Creates of VMs only: while the API server cannot resolve the
	// paramKind (for up to 30 s after it starts) or the prototype is
	// missing, the policy refuses whatever it matches, whoever asks.
	rules := vap.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 ||
		!cmp.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{"CREATE"}) ||
		!cmp.Equal(rules[0].APIGroups, []string{"kubevirt.io"}) || !cmp.Equal(rules[0].Resources, []string{"virtualmachines"}) {
		t.Errorf("resourceRules = %+v, want CREATE of kubevirt.io virtualmachines only", rules)
	}
	wantMatch := []admissionregistrationv1.MatchCondition{{
		Name:       "vmctl-agent",
		Expression: "request.userInfo.username == 'system:serviceaccount:vms:vmctl-testvm'",
	}}
	if diff := cmp.Diff(wantMatch, vap.Spec.MatchConditions); diff != "" {
		t.Errorf("matchConditions (-want +got):\n%s", diff)
	}
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy = %v, want Fail", vap.Spec.FailurePolicy)
	}
	// The revision store is the parameter the rules compare a created VM
	// with: never the prototype.
	if diff := cmp.Diff(&admissionregistrationv1.ParamKind{APIVersion: "vmctl.kubevirt.io/v1alpha1", Kind: "VMRevisionStore"}, vap.Spec.ParamKind); diff != "" {
		t.Errorf("paramKind (-want +got):\n%s", diff)
	}
	wantRef := &admissionregistrationv1.ParamRef{Name: "vmctl-testvm-vm-revisions", Namespace: "vms", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	if diff := cmp.Diff(wantRef, vapb.Spec.ParamRef); diff != "" {
		t.Errorf("binding paramRef (-want +got):\n%s", diff)
	}
	// What the rules do is judged by the API server in the e2e test
	// TestStolenAgentToken; here, that every refusal says why.
	for _, v := range vap.Spec.Validations {
		if v.Message == "" || v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
			t.Errorf("validation %q: message %q reason %v, want a message and Forbidden", v.Expression, v.Message, v.Reason)
		}
	}

	if vapb.Spec.PolicyName != vap.Name {
		t.Errorf("binding policyName = %q, want %q", vapb.Spec.PolicyName, vap.Name)
	}
	if !cmp.Equal(vapb.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("validationActions = %v, want [Deny]", vapb.Spec.ValidationActions)
	}
	wantNS := map[string]string{"kubernetes.io/metadata.name": "vms"}
	if diff := cmp.Diff(wantNS, vapb.Spec.MatchResources.NamespaceSelector.MatchLabels); diff != "" {
		t.Errorf("binding namespaceSelector (-want +got):\n%s", diff)
	}
	// Bound to the prototype's derived objects only: the parameter is
	// looked up before matchConditions, so a binding over every VM would
	// refuse everyone's VM writes while the prototype is missing.
	wantObjects := map[string]string{"vmctl.kubevirt.io/prototype": "testvm"}
	if diff := cmp.Diff(wantObjects, vapb.Spec.MatchResources.ObjectSelector.MatchLabels); diff != "" {
		t.Errorf("binding objectSelector (-want +got):\n%s", diff)
	}
	// So is the policy: one whose paramKind the API server cannot resolve
	// yet refuses every request it matches, before matchConditions.
	if diff := cmp.Diff(wantObjects, vap.Spec.MatchConstraints.ObjectSelector.MatchLabels); diff != "" {
		t.Errorf("policy objectSelector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantNS, vap.Spec.MatchConstraints.NamespaceSelector.MatchLabels); diff != "" {
		t.Errorf("policy namespaceSelector (-want +got):\n%s", diff)
	}

	// The guard keeps the agent to those objects and to creating and
	// deleting, with no parameter, so it judges also while the API server
	// cannot resolve the other's: it alone sees every delete and update.
	guard := find[*admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, "", "vmctl-testvm-guard.vms")
	guardb := find[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, objs, "", "vmctl-testvm-guard.vms")
	if guard.Spec.ParamKind != nil || guardb.Spec.ParamRef != nil {
		t.Errorf("guard paramKind %v, paramRef %v: want none", guard.Spec.ParamKind, guardb.Spec.ParamRef)
	}
	if diff := cmp.Diff(vap.Spec.MatchConditions, guard.Spec.MatchConditions); diff != "" {
		t.Errorf("guard matchConditions (-policy +guard):\n%s", diff)
	}
	grules := guard.Spec.MatchConstraints.ResourceRules
	if len(grules) != 1 ||
		!cmp.Equal(grules[0].Operations, []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"}) ||
		!cmp.Equal(grules[0].APIGroups, []string{"kubevirt.io"}) || !cmp.Equal(grules[0].Resources, []string{"virtualmachines", "virtualmachines/*", "virtualmachineinstances", "virtualmachineinstances/*"}) {
		t.Errorf("guard resourceRules = %+v, want CREATE, UPDATE, DELETE of kubevirt.io virtualmachines, virtualmachineinstances and their subresources", grules)
	}
	for _, v := range guard.Spec.Validations {
		if v.Message == "" || v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
			t.Errorf("guard validation %q: message %q reason %v, want a message and Forbidden", v.Expression, v.Message, v.Reason)
		}
		if strings.Contains(v.Expression, "params") {
			t.Errorf("guard validation %q uses params, which it has none of", v.Expression)
		}
	}
	for _, v := range guard.Spec.Variables {
		if strings.Contains(v.Expression, "params") {
			t.Errorf("guard variable %s = %q uses params, which it has none of", v.Name, v.Expression)
		}
	}
	if guard.Spec.MatchConstraints.ObjectSelector != nil {
		t.Errorf("guard objectSelector = %v, want every object", guard.Spec.MatchConstraints.ObjectSelector)
	}
	if guardb.Spec.PolicyName != guard.Name || guardb.Spec.MatchResources.ObjectSelector != nil ||
		!cmp.Equal(guardb.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("guard binding = %+v, want policy %s, Deny, every object of the namespace", guardb.Spec, guard.Name)
	}
}

func TestAdmissionPolicyNamesAreUniquePerNamespace(t *testing.T) {
	names := map[string]bool{}
	for _, ns := range []string{"a", "b"} {
		p := validParams(KindDeployment)
		p.Namespace = ns
		p.ProtoNamespace = "protos"
		p.AdmissionPolicy = true
		for _, s := range summary(t, mustBuild(t, p)) {
			if strings.HasPrefix(s, "Validating") {
				if names[s] {
					t.Errorf("%s is made by scaffolds in two namespaces", s)
				}
				names[s] = true
			}
		}
	}
	if len(names) != 16 {
		t.Errorf("got %d shared-scope objects, want 16: %v", len(names), names)
	}
}
