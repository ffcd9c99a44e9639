package scaffold

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

// TestAgentContract checks the scaffolded Pod against what the agent reads:
// its environment, its probe port and its default delete timeout. A change on
// either side that breaks the other fails here.
func TestAgentContract(t *testing.T) {
	if got := time.Duration(DefaultGracePeriodSeconds-deleteMarginSeconds) * time.Second; got != agent.DefaultDeleteTimeout {
		t.Errorf("default grace period less the margin is %v, but the agent's default --delete-timeout is %v: scaffold would pass the wrong default",
			got, agent.DefaultDeleteTimeout)
	}
	if _, port, _ := strings.Cut(agent.DefaultProbeAddress, ":"); port != strconv.Itoa(int(ProbePort)) {
		t.Errorf("agent serves probes on %q, scaffold probes port %d", agent.DefaultProbeAddress, ProbePort)
	}

	ds := find[*appsv1.DaemonSet](t, mustBuild(t, validParams(KindDaemonSet)), "vms", "vmctl-testvm")
	env := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	for name, path := range map[string]string{
		contract.EnvPodName:      "metadata.name",
		contract.EnvPodNamespace: "metadata.namespace",
		contract.EnvPodUID:       "metadata.uid",
		contract.EnvNodeName:     "spec.nodeName",
	} {
		if env[name] != path {
			t.Errorf("env %s = %q, want fieldRef %s", name, env[name], path)
		}
	}
}

// TestAgentContractReservation checks a reserving Pod against what the
// agent reads to give the room back: the container it resizes, the
// requests it is told through the downward API, and its own share in its
// flags, which must be what the container asks for less the reservation.
func TestAgentContractReservation(t *testing.T) {
	p := validParams(KindDeployment)
	p.Reservation = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	c := find[*appsv1.Deployment](t, mustBuild(t, p), "vms", "vmctl-testvm").Spec.Template.Spec.Containers[0]
	if c.Name != contract.ContainerName {
		t.Errorf("container %q, but the agent resizes %q", c.Name, contract.ContainerName)
	}
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			refs[e.Name] = e.ValueFrom.ResourceFieldRef.Resource + "/" + e.ValueFrom.ResourceFieldRef.Divisor.String()
		}
	}
	if diff := cmp.Diff(map[string]string{contract.EnvRequestsCPU: "requests.cpu/1m", contract.EnvRequestsMemory: "requests.memory/1"}, refs); diff != "" {
		t.Errorf("resource env (-want +got):\n%s", diff)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(a, "=")
		flags[name] = value
	}
	own, err := contract.ParseResources(flags["--own-requests"])
	if err != nil {
		t.Fatal(err)
	}
	limits, err := contract.ParseResources(flags["--own-limits"])
	if err != nil {
		t.Fatal(err)
	}
	q := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(corev1.ResourceRequirements{Requests: podtemplate.OwnRequests(), Limits: podtemplate.OwnLimits()}, corev1.ResourceRequirements{Requests: own, Limits: limits}, q); diff != "" {
		t.Errorf("the agent's own share from its flags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(podtemplate.AgentResources(p.Reservation), c.Resources, q); diff != "" {
		t.Errorf("container resources (-want +got):\n%s", diff)
	}
}
