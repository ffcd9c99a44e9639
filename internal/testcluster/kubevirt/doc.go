// Package kubevirt runs KubeVirt's own control plane, the real virt-api and
// virt-controller of a KubeVirt release, against a testcluster.Cluster for
// the end-to-end tests and `make demo`, as virt-operator would install them:
//
//   - EnsureRelease builds both commands of a Release from the tools module
//     beside this package (internal/testcluster/kubevirt/tools, whose go.mod
//     files are the one place the versions are written) into
//     <repo>/.cache/kubevirt/<version> once, and has KubeVirt's own functions
//     print its CRDs, RBAC and webhook configurations there. EnsureBinaries
//     is EnsureRelease of Newest.
//   - The cluster installs the CRDs (testcluster.Options.CRDs).
//   - Start installs the RBAC, creates the KubeVirt CR (CRName) with the
//     status virt-operator would give it, the release among it as
//     observedKubeVirtVersion, runs each component as its own KubeVirt
//     ServiceAccount, registers virt-api's validating and mutating webhooks
//     pointed at virt-api on 127.0.0.1 with a CA of its own, and restarts a
//     component that exits. Stopping the cluster (also on Ctrl-C, see
//     testcluster.Cluster.StopOnSignal) removes the webhooks and stops both.
//
// On kwok's nodes virt-handler does not run: the stand-in in package doubles
// reports the two VMI phases it would, with virt-handler's identity on each
// node (KubeVirt is a doubles.HandlerIdentity), and kwok never pulls
// Options.LauncherImage. On the
// real node (package node), StartHandler runs KubeVirt's own virt-handler as
// virt-operator's DaemonSet, from images of KubeVirt's node side
// (EnsureNodeSide, package images), with Options.Emulation on.
//
// A TestMain that adds KubeVirt to a shared cluster:
//
//	kvBins, err := kubevirt.EnsureBinaries(ctx, "", os.Stderr)
//	...
//	c, err := testcluster.Start(ctx, testcluster.Options{CRDs: []string{kvBins.CRDs}, ...})
//	...
//	defer c.Stop() // stops KubeVirt first
//	kv, err := kubevirt.Start(ctx, c, kubevirt.Options{Binaries: kvBins})
//	...
//	go doubles.RunVirtHandler(ctx, kv, log)
package kubevirt
