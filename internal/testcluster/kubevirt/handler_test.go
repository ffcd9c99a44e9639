package kubevirt

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// kubevirtHandlerDaemonSet is the part of virt-operator's virt-handler
// DaemonSet (v1.7.0) that handlerForNode changes.
func kubevirtHandlerDaemonSet() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	pod := &ds.Spec.Template.Spec
	pod.InitContainers = []corev1.Container{{Name: "virt-launcher", Command: []string{"/bin/sh", "-c"}, Args: []string{"node-labeller.sh"}}}
	handler := corev1.Container{Name: "virt-handler", Args: []string{"--port", "8443"}}
	for name, path := range map[string]string{
		"libvirt-runtimes": "/var/run/kubevirt-libvirt-runtimes", "virt-share-dir": "/var/run/kubevirt",
		"virt-private-dir": "/var/run/kubevirt-private", "kubelet-pods": "/var/lib/kubelet/pods",
		"kubelet": "/var/lib/kubelet", "node-labeller": "/var/lib/kubevirt-node-labeller",
	} {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
		mountPath := path
		if name == "kubelet-pods" {
			mountPath = "/pods"
		}
		handler.VolumeMounts = append(handler.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: mountPath})
	}
	pod.Containers = []corev1.Container{handler}
	return ds
}

func TestHandlerForNode(t *testing.T) {
	n := HandlerNode{Name: "real-node", KubeletRoot: "/tmp/c/node/kubelet", StateDir: "/tmp/c/node/kubevirt"}
	ds := kubevirtHandlerDaemonSet()
	if err := handlerForNode(ds, n); err != nil {
		t.Fatal(err)
	}
	pod := ds.Spec.Template.Spec
	if pod.NodeSelector[corev1.LabelHostname] != "real-node" {
		t.Errorf("nodeSelector %v, want the real node only", pod.NodeSelector)
	}
	for _, v := range pod.Volumes {
		p := v.HostPath.Path
		if v.Name == "kubelet-device-plugins" {
			if p != "/var/lib/kubelet/device-plugins" {
				t.Errorf("device plugins at %s, want the kubelet's fixed directory", p)
			}
			continue
		}
		if !strings.HasPrefix(p, "/tmp/c/node/") {
			t.Errorf("volume %s mounts the machine's %s, want a path under the node's directories", v.Name, p)
		}
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["kubelet"] != n.KubeletRoot || mounts["kubelet-pods"] != "/pods" || mounts["virt-share-dir"] != "/var/run/kubevirt" {
		t.Errorf("mounts %v: want the kubelet's root at its own path, /pods and KubeVirt's paths kept", mounts)
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	if !strings.Contains(args, "--kubelet-root "+n.KubeletRoot) || !strings.Contains(args, "--kubelet-pods-dir "+n.KubeletRoot+"/pods") {
		t.Errorf("virt-handler's args %q lack the kubelet's paths", args)
	}
	if init := pod.InitContainers[0].Args; !slices.Equal(init, []string{labellerWithoutKVM}) {
		t.Errorf("node labeller runs %q, want it without the KVM probe", init)
	}
}

func TestHandlerForNodeRefusesAnUnknownHostPath(t *testing.T) {
	ds := kubevirtHandlerDaemonSet()
	ds.Spec.Template.Spec.Volumes = append(ds.Spec.Template.Spec.Volumes, corev1.Volume{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev"}}})
	err := handlerForNode(ds, HandlerNode{Name: "n", KubeletRoot: "/k", StateDir: "/s"})
	if err == nil || !strings.Contains(err.Error(), "/dev") {
		t.Fatalf("err %v, want one naming /dev", err)
	}
}
