// Package metricsadapter runs vmctl-metrics-adapter against a
// testcluster.Cluster as `kubectl vmctl scaffold metrics-adapter`'s
// Deployment would run it in a cluster, for the e2e tests and `make demo`:
//
//   - Start applies scaffold's objects (ServiceAccount, RBAC, Service,
//     APIServices of custom.metrics.k8s.io v1beta2 and v1beta1) but the
//     Deployment, whose Pod a process on loopback stands in for. No
//     kube-proxy runs here, so the Service is an ExternalName of localhost,
//     as package kubevirt's virt-api's and package metricsserver's are, and
//     the APIServices check a certificate made for the Service's name.
//   - The process runs with a token of scaffold's ServiceAccount, so RBAC
//     holds it to scaffold's rules, and Start returns once the aggregator
//     finds both APIServices Available.
//   - Stop, or the cluster's Stop, removes the APIServices first (a group
//     whose server is gone fails every client's discovery), then the rest.
//
// The adapter reads metrics-server's PodMetrics of the launcher Pods:
// start package metricsserver too for it to answer with figures.
package metricsadapter
