package scaffold

import (
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
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
		agent.EnvPodName:      "metadata.name",
		agent.EnvPodNamespace: "metadata.namespace",
		agent.EnvPodUID:       "metadata.uid",
		agent.EnvNodeName:     "spec.nodeName",
		agent.EnvPlacementKey: "metadata.annotations['" + placement.Annotation + "']",
	} {
		if env[name] != path {
			t.Errorf("env %s = %q, want fieldRef %s", name, env[name], path)
		}
	}
}
