package testcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// NodeName is the name of the i-th fake node.
func NodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// The label that marks kwok's nodes, as kwok's own examples do, for a
// selector that tells them from real ones.
const (
	// KwokLabel is the label's key.
	KwokLabel = "type"
	// KwokLabelValue is its value on kwok's nodes.
	KwokLabelValue = "kwok"
)

// resourceMetricsPath is the annotation by which metrics-server scrapes a
// node's resource metrics at a path of the node's choosing instead of
// /metrics/resource: kwok serves every node's at one address, so the path
// names the node.
const resourceMetricsPath = "metrics.k8s.io/resource-metrics-path"

// fakeNode is a node kwok manages: annotated for kwok's selector and with the
// path of its resource metrics on kwok's server (see kwokConfig), with room for
// any number of Pods. It carries what virt-handler's device plugins and node
// labeller would give a KubeVirt node, since KubeVirt's virt-launcher Pods
// ask for them: the kubevirt.io/schedulable and q35 machine-type labels and
// the KVM, TUN and vhost-net devices.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("1000"),
		corev1.ResourceMemory:           resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("1000"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		"devices.kubevirt.io/kvm":       resource.MustParse("1000"),
		"devices.kubevirt.io/tun":       resource.MustParse("1000"),
		"devices.kubevirt.io/vhost-net": resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				NodeAnnotation:      "fake",
				resourceMetricsPath: "/metrics/nodes/" + name + "/metrics/resource",
			},
			Labels: map[string]string{
				corev1.LabelHostname:                name,
				corev1.LabelOSStable:                "linux",
				corev1.LabelArchStable:              "amd64",
				KwokLabel:                           KwokLabelValue,
				"kubevirt.io/schedulable":           "true",
				"machine-type.node.kubevirt.io/q35": "true",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// createNodes creates the fake nodes and removes the not-ready taint that the
// TaintNodesByCondition admission plugin adds on create: no node-lifecycle
// controller runs to remove it once kwok marks the node Ready.
func createNodes(ctx context.Context, cs kubernetes.Interface, n int) ([]string, error) {
	names := make([]string, 0, n)
	for i := range n {
		if err := createNode(ctx, cs, NodeName(i)); err != nil {
			return nil, err
		}
		names = append(names, NodeName(i))
	}
	return names, nil
}

// createNode creates one fake node and removes its not-ready taint.
func createNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	return createNodeWith(ctx, cs, fakeNode(name))
}

// createNodeWith creates node and removes its not-ready taint.
func createNodeWith(ctx context.Context, cs kubernetes.Interface, node *corev1.Node) error {
	name := node.Name
	node, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	if len(node.Spec.Taints) > 0 {
		// A merge patch cannot conflict with kwok's status updates.
		patch := []byte(`{"spec":{"taints":null}}`)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("untaint node %s: %w", node.Name, err)
		}
	}
	return nil
}

// AddNodes creates n more fake nodes, named after the last (NodeName(from..)),
// waits until they are Ready and returns their names. Cluster.Nodes stays
// as Start made it; a caller that is done with the nodes deletes them.
func (c *Cluster) AddNodes(ctx context.Context, from, n int) ([]string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	names := make([]string, 0, n)
	for i := from; i < from+n; i++ {
		if err := createNode(ctx, cs, NodeName(i)); err != nil {
			return names, err
		}
		names = append(names, NodeName(i))
	}
	return names, WaitFor(ctx, "the added nodes to be Ready", c.processes(), func(ctx context.Context) (bool, error) {
		return nodesReady(ctx, cs, names)
	})
}

// AddNodesWith creates fake nodes named names, each as change makes it
// (labels, taints, a smaller capacity), waits until they are Ready and
// returns their names. The caller deletes them when done.
func (c *Cluster) AddNodesWith(ctx context.Context, names []string, change func(*corev1.Node)) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	for _, name := range names {
		node := fakeNode(name)
		change(node)
		if err := createNodeWith(ctx, cs, node); err != nil {
			return err
		}
	}
	return WaitFor(ctx, "the added nodes to be Ready", c.processes(), func(ctx context.Context) (bool, error) {
		return nodesReady(ctx, cs, names)
	})
}

// nodesReady reports whether every named node has condition Ready=True.
func nodesReady(ctx context.Context, cs kubernetes.Interface, names []string) (bool, error) {
	for _, name := range names {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !NodeReady(node) {
			return false, fmt.Errorf("node %s is not Ready yet", name)
		}
	}
	return true, nil
}

// NodeReady reports whether node has condition Ready=True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
