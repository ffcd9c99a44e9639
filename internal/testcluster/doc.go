// Package testcluster runs a real Kubernetes control plane on loopback for the
// end-to-end tests and `make demo`: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet for
// fake nodes, plus KubeVirt's VirtualMachine and VirtualMachineInstance CRDs.
// EnsureBinaries builds the components from the tools module
// (internal/testcluster/tools) into <repo>/.cache/testcluster once; Start runs
// them; ForTest wires a cluster into one test.
//
// kwok runs every Pod except vmctl agent Pods (labels AgentNameLabel and
// AgentComponentLabel), whose status and deletion the kubelet double in
// package doubles manages instead. Package node adds a real node (kubelet,
// kube-proxy, containerd) beside kwok's, built from the same tools module;
// a cluster for it listens on Options.BindAddress 0.0.0.0.
//
// A TestMain that shares one cluster between a package's tests:
//
//	func TestMain(m *testing.M) {
//		os.Exit(run(m))
//	}
//
//	func run(m *testing.M) int {
//		ctx := context.Background()
//		bins, err := testcluster.EnsureBinaries(ctx, "", os.Stderr)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		c, err := testcluster.Start(ctx, testcluster.Options{Nodes: 3, Binaries: bins, Log: os.Stderr})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		defer c.Stop()
//		defer c.StopOnSignal()() // Ctrl-C on `go test` still stops the cluster
//		cluster = c // a package variable the tests read
//		return m.Run()
//	}
package testcluster
