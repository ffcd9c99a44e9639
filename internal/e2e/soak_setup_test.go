//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// The soak's three workloads, one per kind, each with its own prototype.
const (
	soakDeployProto = "sa"
	soakSTSProto    = "ss"
	soakDSProto     = "sd"
)

const (
	// soakInstanceLabel tells the workloads' Pods apart.
	soakInstanceLabel = contract.LabelInstance
	// soakNodeLabel marks the nodes the soak adds and removes; its
	// DaemonSet runs only there, so node churn is the soak's own.
	soakNodeLabel = "soak.vmctl.test/namespace"
	// soakFirstNode numbers the soak's nodes after any the tests or the
	// fleet benchmark add (NodeName(n)).
	soakFirstNode = 200
	// soakMaxReplicas and soakMaxNodes bound the fleet: enough to have
	// several agents per workload and per node, few enough for CI.
	soakMaxReplicas = 4
	soakMaxNodes    = 4
)

// soak is the soak's state: the cluster's expected shape, the hand edits
// and hand-made VMs to check, and what ran.
type soak struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	seed uint64
	rng  *rand.Rand
	obs  *soakObserver

	// The expected shape: replicas of the Deployment and StatefulSet, by
	// prototype; the soak's nodes (the DaemonSet's), by name.
	replicas map[string]int
	nodes    []string
	allNodes []string // every node the soak made, to delete at the end
	nextNode int

	// handmade are the VMs the soak made by hand, as first seen settled.
	handmade map[string]*kubevirtv1.VirtualMachine
	// edits are the derived VMs the soak edited by hand: the value it gave
	// their "app" label, by VM UID.
	edits map[types.UID]string
	// rev numbers the soak's prototype edits.
	rev int

	// What ran and what was checked.
	log           []string
	counts        map[string]int
	checks, steps int
	// reservationsCompared counts the agent Pods whose room
	// checkReservations compared with their launcher Pod's.
	reservationsCompared int
	longestSettle        time.Duration
	longestSettleOp      string
	requests             soakRequests
	failure              string // why the soak failed, if it did (see fatalf)
}

func newSoak(t *testing.T, seed uint64) *soak {
	return &soak{
		t: t, ctx: t.Context(), seed: seed, rng: newRand(seed),
		replicas: map[string]int{soakDeployProto: 2, soakSTSProto: 2},
		nextNode: soakFirstNode,
		handmade: map[string]*kubevirtv1.VirtualMachine{},
		edits:    map[types.UID]string{},
		counts:   map[string]int{},
	}
}

// setUp makes the namespace, two nodes for the DaemonSet, the three
// prototypes and their workloads (scaffolded and applied with kubectl), and
// starts watching.
func (s *soak) setUp() {
	t := s.t
	s.ns = namespace(t)
	// Drains and request counts must meet only the soak's own Pods.
	waitOthersGone(t, s.ns)
	t.Cleanup(func() {
		for _, n := range s.allNodes {
			_ = e.kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	s.requests.start(t, s.ns)
	for range 2 {
		if _, err := s.addNode(); err != nil {
			t.Fatal(err)
		}
	}
	for _, proto := range []string{soakDeployProto, soakSTSProto, soakDSProto} {
		createPrototypeWith(t, s.ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) { vm.Name = proto })
	}
	s.apply(soakDeployProto, scaffold.KindDeployment)
	s.apply(soakSTSProto, scaffold.KindStatefulSet)
	s.apply(soakDSProto, scaffold.KindDaemonSet)
	s.obs = soakObserve(t, s.ns)
	s.collideFormerPod() // one hand-made VM from the start
}

// apply scaffolds proto's workload of kind with kubectl vmctl scaffold and
// applies it with kubectl; a DaemonSet gets a nodeSelector for the soak's
// nodes, as a user would add by hand.
func (s *soak) apply(proto string, kind scaffold.Kind) {
	t := s.t
	args := []string{"scaffold", strings.ToLower(string(kind)), proto, "-n", s.ns, "--grace-period", "60"}
	if kind != scaffold.KindDaemonSet {
		args = append(args, "--replicas", fmt.Sprint(s.replicas[proto]))
	}
	manifests := vmctl(t, args...)
	if kind == scaffold.KindDaemonSet {
		var err error
		if manifests, err = withNodeSelector(manifests, map[string]string{soakNodeLabel: s.ns}); err != nil {
			t.Fatal(err)
		}
	}
	kubectl(t, []byte(manifests), "apply", "-f", "-")
}

// withNodeSelector sets nodeSelector on the DaemonSets among the YAML
// documents of manifests, and returns them as one JSON List.
func withNodeSelector(manifests string, selector map[string]string) (string, error) {
	return editManifests(manifests, func(obj map[string]any) (bool, error) {
		if obj["kind"] == "DaemonSet" {
			spec, _ := obj["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			podSpec, _ := tmpl["spec"].(map[string]any)
			if podSpec == nil {
				return false, errors.New("the scaffolded DaemonSet has no spec.template.spec")
			}
			podSpec["nodeSelector"] = selector
		}
		return true, nil
	})
}

// editManifests passes each YAML document of manifests to edit, which may
// change it, and returns those edit keeps as one JSON List.
func editManifests(manifests string, edit func(obj map[string]any) (keep bool, err error)) (string, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var items []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("read the scaffolded manifests: %w", err)
		}
		if obj == nil {
			continue
		}
		keep, err := edit(obj)
		if err != nil {
			return "", err
		}
		if keep {
			items = append(items, obj)
		}
	}
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	return buf.String(), err
}

// addNode adds one Ready node labelled for the soak's DaemonSet.
func (s *soak) addNode() (string, error) {
	names, err := e.cluster.AddNodes(s.ctx, s.nextNode, 1)
	s.allNodes = append(s.allNodes, names...)
	if err != nil {
		return "", err
	}
	s.nextNode++
	name := names[0]
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, soakNodeLabel, s.ns)
	if _, err := e.kube.CoreV1().Nodes().Patch(s.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("label node %s: %w", name, err)
	}
	s.nodes = append(s.nodes, name)
	return name, nil
}
