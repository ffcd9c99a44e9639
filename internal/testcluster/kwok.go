package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Labels that mark a vmctl agent Pod. kwok leaves these Pods to the kubelet
// double, which runs the real agent and reports its readiness.
const (
	AgentNameLabel      = "app.kubernetes.io/name"
	AgentNameValue      = "vmctl"
	AgentComponentLabel = "app.kubernetes.io/component"
	AgentComponentValue = "agent"
)

// NodeAnnotation marks the nodes kwok manages (--manage-nodes-with-annotation-selector).
const NodeAnnotation = "kwok.x-k8s.io/node"

// notAgentPod is a kwok jq selector that is false exactly for vmctl agent Pods.
func notAgentPod() map[string]any {
	return map[string]any{"jq": map[string]any{
		"key": fmt.Sprintf(`.metadata.labels[%q] == %q and .metadata.labels[%q] == %q`,
			AgentNameLabel, AgentNameValue, AgentComponentLabel, AgentComponentValue),
		"operator": "NotIn",
		"values":   []any{"true"},
	}}
}

// kwokConfig renders kwok's shipped stages into one --config file: node stages
// as shipped, pod stages restricted to Pods that are not vmctl agents and
// without their built-in delays, so Pods start and go within a second. The
// per-Pod annotations the stages read (pod-ready.stage.kwok.x-k8s.io/delay, ...)
// still add delays where a test wants them.
//
// The usage files go in as shipped: kwok then serves, at
// /metrics/nodes/<node>/metrics/resource, what a kubelet serves at
// /metrics/resource, for metrics-server (package metricsserver). kwok
// evaluates the annotation kwok.x-k8s.io/usage-cpu (default 1m) once per
// container, so each container of the Pod uses that much and the Pod the
// sum: a Pod of one container annotated 250m uses 250m. kwok.x-k8s.io/usage-memory
// (default 1Mi) goes alike.
func kwokConfig(b Binaries) ([]byte, error) {
	var out bytes.Buffer
	add := func(path string, pod bool) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read kwok stage: %w", err)
		}
		var stage map[string]any
		if err := yaml.Unmarshal(data, &stage); err != nil {
			return fmt.Errorf("parse kwok stage %s: %w", path, err)
		}
		if pod {
			if err := adaptPodStage(stage); err != nil {
				return fmt.Errorf("adapt kwok stage %s: %w", path, err)
			}
		}
		doc, err := yaml.Marshal(stage)
		if err != nil {
			return fmt.Errorf("encode kwok stage %s: %w", path, err)
		}
		out.WriteString("---\n")
		out.Write(doc)
		return nil
	}
	for _, p := range b.NodeStages {
		if err := add(p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range b.PodStages {
		if err := add(p, true); err != nil {
			return nil, err
		}
	}
	for _, p := range b.Usage {
		if err := add(p, false); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// adaptPodStage excludes agent Pods and drops the stage's fixed delays. It
// also lets pod-ready mend a Running Pod whose containers are not running.
// kwok applies each stage to the Pod as its informer last saw it; under load
// it applies an earlier stage (init containers completed) again after
// pod-ready, and the Pod is left Running with its containers waiting in
// ContainerCreating, a state no shipped stage matches (pod-ready wants a
// Pending Pod; kubernetes-sigs/kwok#1002). 14 of 1,000 KubeVirt launcher
// Pods stayed so in a fleet benchmark, and their VMs never started.
func adaptPodStage(stage map[string]any) error {
	spec, ok := stage["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("no spec")
	}
	sel, _ := spec["selector"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
		spec["selector"] = sel
	}
	exprs, _ := sel["matchExpressions"].([]any)
	if meta, _ := stage["metadata"].(map[string]any); meta["name"] == "pod-ready" {
		for _, e := range exprs {
			if e, _ := e.(map[string]any); e["key"] == ".status.phase" {
				e["values"] = []any{"Pending", "Running"}
			}
		}
	}
	sel["matchExpressions"] = append(exprs, notAgentPod())

	delay, _ := spec["delay"].(map[string]any)
	for k, v := range delay {
		if strings.HasSuffix(k, "Milliseconds") {
			delete(delay, k)
			continue
		}
		// Keep delays a Pod asks for by annotation; drop the others
		// (pod-delete waits up to the deletion grace period).
		if from, ok := v.(map[string]any); ok && !strings.Contains(fmt.Sprint(from), ".metadata.annotations") {
			delete(delay, k)
		}
	}
	return nil
}
