// Package metricsserver runs metrics-server v0.8.0, the real one, against a
// testcluster.Cluster, so that the resource metrics API (metrics.k8s.io) and
// the HorizontalPodAutoscalers that read it work as in a real cluster:
//
//   - EnsureBinary builds it from the tools module beside this package
//     (internal/testcluster/metricsserver/tools) into
//     <repo>/.cache/testcluster/metrics-server once.
//   - kwok, which the cluster runs, serves each fake node's resource metrics
//     (what a kubelet serves at /metrics/resource) from the annotations of
//     its Pods: kwok.x-k8s.io/usage-cpu and kwok.x-k8s.io/usage-memory, per
//     container (see testcluster's kwokConfig). The nodes' InternalIP and
//     status port lead there, and their annotation
//     metrics.k8s.io/resource-metrics-path names each node's path.
//   - With Options.RealNodes it scrapes the real nodes' kubelets instead
//     (package node), whose figures are the containers' cgroups': the
//     kubelet authenticates metrics-server's token and authorizes its
//     nodes/metrics by webhook, as on a real cluster.
//   - Start runs metrics-server as its ServiceAccount with upstream's RBAC,
//     registers it as APIService v1beta1.metrics.k8s.io through a Service
//     of type ExternalName that names localhost, and returns once the
//     aggregator finds it available. Stop removes all it made.
//
// The cluster does not start it: a test that needs it starts it and stops
// it when done, so the other tests spend no CPU on its scrapes and no
// client's discovery waits on one more API group.
package metricsserver
