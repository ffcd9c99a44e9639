package kubevirt

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// HandlerNode is the real node KubeVirt's own virt-handler runs on (see
// StartHandler).
type HandlerNode struct {
	// Name is the Node's name.
	Name string
	// KubeletRoot is the node's kubelet --root-dir. virt-handler mounts and
	// finds launcher Pods' volumes there, from inside its container and from
	// the machine's mount namespace alike, so the DaemonSet mounts it at the
	// same path; it must be on a shared mount (Bidirectional propagation).
	KubeletRoot string
	// StateDir holds, on a shared mount, what a KubeVirt node keeps under
	// /var/run/kubevirt, /var/run/kubevirt-private,
	// /var/run/kubevirt-libvirt-runtimes and /var/lib/kubevirt-node-labeller:
	// the harness makes nothing outside its own directories.
	StateDir string
}

// handlerHostPaths maps the host paths of KubeVirt's DaemonSet to n's.
func (n HandlerNode) handlerHostPaths() map[string]string {
	return map[string]string{
		"/var/run/kubevirt":                  filepath.Join(n.StateDir, "run"),
		"/var/run/kubevirt-private":          filepath.Join(n.StateDir, "private"),
		"/var/run/kubevirt-libvirt-runtimes": filepath.Join(n.StateDir, "libvirt-runtimes"),
		"/var/lib/kubevirt-node-labeller":    filepath.Join(n.StateDir, "node-labeller"),
		"/var/lib/kubelet/pods":              filepath.Join(n.KubeletRoot, "pods"),
		"/var/lib/kubelet":                   n.KubeletRoot,
	}
}

// kubeletDevicePlugins is where device plugins and the kubelet meet:
// v1beta1.DevicePluginPath, fixed in both virt-handler's and the kubelet's
// code, whatever the kubelet's --root-dir.
const kubeletDevicePlugins = "/var/lib/kubelet/device-plugins"

// labellerWithoutKVM runs KubeVirt's node-labeller.sh without its KVM probe.
// /dev/kvm on the test machine cannot run a guest (the cluster runs with
// useEmulation), and the script would chmod the machine's /dev/kvm, which
// the harness does not own. The rest of the script runs as KubeVirt wrote
// it, with virttype qemu.
const labellerWithoutKVM = `sed -e 's|^if \[ -e /dev/kvm \]; then|if false; then|' ` +
	`-e 's|^if \[ ! -e /dev/kvm \] \&\& |if false \&\& |' "$(command -v node-labeller.sh)" | bash`

// handlerForNode adapts virt-operator's virt-handler DaemonSet to node n:
// only on n, its host paths in n's directories, the kubelet's paths where n's
// kubelet has them, and the node labeller without KVM. Everything else is
// KubeVirt's.
func handlerForNode(ds *appsv1.DaemonSet, n HandlerNode) error {
	pod := &ds.Spec.Template.Spec
	pod.NodeSelector = map[string]string{corev1.LabelHostname: n.Name}
	paths := n.handlerHostPaths()
	for i := range pod.Volumes {
		hp := pod.Volumes[i].HostPath
		if hp == nil {
			continue
		}
		to, ok := paths[hp.Path]
		if !ok {
			return fmt.Errorf("virt-handler's DaemonSet mounts host path %s, which the harness does not map to the node's directories", hp.Path)
		}
		hp.Path = to
		hp.Type = ptr.To(corev1.HostPathDirectoryOrCreate)
	}
	handler := &pod.Containers[0]
	if handler.Name != "virt-handler" {
		return fmt.Errorf("virt-handler's DaemonSet runs %q first, want virt-handler", handler.Name)
	}
	for i := range handler.VolumeMounts {
		if handler.VolumeMounts[i].MountPath == "/var/lib/kubelet" {
			handler.VolumeMounts[i].MountPath = n.KubeletRoot
		}
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "kubelet-device-plugins", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: kubeletDevicePlugins, Type: ptr.To(corev1.HostPathDirectory)},
	}})
	handler.VolumeMounts = append(handler.VolumeMounts, corev1.VolumeMount{Name: "kubelet-device-plugins", MountPath: kubeletDevicePlugins})
	handler.Args = append(handler.Args, "--kubelet-root", n.KubeletRoot, "--kubelet-pods-dir", filepath.Join(n.KubeletRoot, "pods"))
	if len(pod.InitContainers) != 1 || !strings.Contains(strings.Join(pod.InitContainers[0].Args, " "), "node-labeller.sh") {
		return fmt.Errorf("virt-handler's DaemonSet has no node-labeller.sh init container")
	}
	pod.InitContainers[0].Args = []string{labellerWithoutKVM}
	return nil
}

// The Secrets and ConfigMap virt-operator makes for virt-handler: its
// certificates, and the CA that checks its peers'.
var handlerCertSecrets = []string{
	"kubevirt-virt-handler-certs",
	"kubevirt-virt-handler-server-certs",
	"kubevirt-virt-handler-migration-client-certs",
	"kubevirt-virt-handler-vsock-client-certs",
}

const caConfigMap = "kubevirt-ca"

// handlerCerts makes what virt-operator would for virt-handler: one CA, in
// the kubevirt-ca ConfigMap, and a certificate it signed in each of
// virt-handler's Secrets. One certificate serves all four: nothing here
// connects to virt-handler but for what the tests need (none of migration,
// vsock or console is exercised).
func handlerCerts() ([]*corev1.Secret, *corev1.ConfigMap, error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("virt-handler", nil, []string{"virt-handler." + Namespace + ".pod.cluster.local"})
	if err != nil {
		return nil, nil, fmt.Errorf("generate virt-handler's certificate: %w", err)
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parse virt-handler's certificate chain: %w", err)
	}
	if len(certs) < 2 {
		return nil, nil, fmt.Errorf("virt-handler's certificate chain has %d certificates, want the certificate and its CA", len(certs))
	}
	caPEM, err := cert.EncodeCertificates(certs[len(certs)-1])
	if err != nil {
		return nil, nil, err
	}
	leafPEM, err := cert.EncodeCertificates(certs[0])
	if err != nil {
		return nil, nil, err
	}
	var secrets []*corev1.Secret
	for _, name := range handlerCertSecrets {
		secrets = append(secrets, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: leafPEM, corev1.TLSPrivateKeyKey: keyPEM},
		})
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: caConfigMap, Namespace: Namespace},
		Data:       map[string]string{"ca-bundle": string(caPEM)},
	}
	return secrets, cm, nil
}

// StartHandler runs KubeVirt's own virt-handler on node n, as the DaemonSet
// virt-operator makes (Binaries.Handler, adapted by handlerForNode), from the
// images the node has imported (quay.io/kubevirt/virt-handler and
// virt-launcher of Binaries.Version). It returns once the handler is Ready
// and has marked the node schedulable for VMs. StopHandler removes it.
func (k *KubeVirt) StartHandler(ctx context.Context, n HandlerNode) error {
	objs, err := readManifest(k.Binaries.Handler)
	if err != nil {
		return err
	}
	if len(objs) != 2 || objs[1].GetKind() != "DaemonSet" {
		return fmt.Errorf("%s holds %d objects, want a PriorityClass and virt-handler's DaemonSet", k.Binaries.Handler, len(objs))
	}
	pc, ds := &schedulingv1.PriorityClass{}, &appsv1.DaemonSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, pc); err != nil {
		return fmt.Errorf("decode KubeVirt's PriorityClass: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].Object, ds); err != nil {
		return fmt.Errorf("decode virt-handler's DaemonSet: %w", err)
	}
	if _, err := k.admin.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create KubeVirt's PriorityClass: %w", err)
	}
	if err := handlerForNode(ds, n); err != nil {
		return err
	}
	secrets, cm, err := handlerCerts()
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if _, err := k.admin.CoreV1().Secrets(Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create virt-handler's Secret %s: %w", s.Name, err)
		}
	}
	if _, err := k.admin.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the %s ConfigMap: %w", caConfigMap, err)
	}
	if _, err := k.admin.AppsV1().DaemonSets(Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create virt-handler's DaemonSet: %w", err)
	}
	k.logf("virt-handler's DaemonSet created for node %s", n.Name)
	var last string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		node, err := k.admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if node.Labels["kubevirt.io/schedulable"] == "true" {
			return true, nil
		}
		last = k.handlerPodState(ctx)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for virt-handler to mark node %s schedulable: %w (virt-handler: %s)", n.Name, err, last)
	}
	k.logf("virt-handler ready on node %s", n.Name)
	return nil
}

// handlerPodState says where virt-handler's Pod is, for an error message.
func (k *KubeVirt) handlerPodState(ctx context.Context) string {
	pods, err := k.admin.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=virt-handler"})
	if err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return "no Pod yet"
	}
	p := pods.Items[0]
	var states []string
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		switch {
		case s.State.Waiting != nil:
			states = append(states, fmt.Sprintf("%s waiting (%s: %s)", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message))
		case s.State.Terminated != nil:
			states = append(states, fmt.Sprintf("%s terminated (%s, exit %d)", s.Name, s.State.Terminated.Reason, s.State.Terminated.ExitCode))
		default:
			states = append(states, fmt.Sprintf("%s running, ready %v", s.Name, s.Ready))
		}
	}
	return fmt.Sprintf("Pod %s %s: %s", p.Name, p.Status.Phase, strings.Join(states, "; "))
}

// StopHandler deletes virt-handler's DaemonSet and its Pod, and waits for the
// Pod to go, before the node stops: the node's drain would otherwise race
// the DaemonSet controller. The Pod gets handlerStopGrace, not its 330 s.
func (k *KubeVirt) StopHandler(ctx context.Context) error {
	err := k.admin.AppsV1().DaemonSets(Namespace).Delete(ctx, "virt-handler", metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete virt-handler's DaemonSet: %w", err)
	}
	pods := k.admin.CoreV1().Pods(Namespace)
	selector := metav1.ListOptions{LabelSelector: "kubevirt.io=virt-handler"}
	err = pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(handlerStopGrace.Seconds()))}, selector)
	if err != nil {
		return fmt.Errorf("delete virt-handler's Pod: %w", err)
	}
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, selector)
		return err == nil && len(list.Items) == 0, nil
	})
}

// handlerStopGrace is what virt-handler's Pod gets to stop when the harness
// stops: its VMs are gone by then.
const handlerStopGrace = 5 * time.Second
