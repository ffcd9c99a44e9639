package doubles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func envTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "vmctl-0", Namespace: "ns", UID: "pod-uid",
			Labels:      map[string]string{"app.kubernetes.io/name": "vmctl"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "vmctl"},
	}
}

func TestContainerEnv(t *testing.T) {
	c := &corev1.Container{Name: "agent", Env: []corev1.EnvVar{
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
		fieldEnv("NODE_NAME", "spec.nodeName"),
		fieldEnv("SA", "spec.serviceAccountName"),
		fieldEnv("POD_IP", "status.podIP"),
		fieldEnv("HOST_IP", "status.hostIP"),
		fieldEnv("APP", "metadata.labels['app.kubernetes.io/name']"),
		fieldEnv("NOTE", "metadata.annotations['note']"),
		fieldEnv("MISSING_LABEL", "metadata.labels['nope']"),
		{Name: "LITERAL", Value: "plain"},
		{Name: "GREETING", Value: "hi-$(POD_NAME)-on-$(NODE_NAME)-$(LATER)-$$(POD_NAME)"},
		{Name: "LATER", Value: "late"},
	}}
	got, err := containerEnv(envTestPod(), c, "10.250.0.1", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POD_NAME=vmctl-0",
		"POD_NAMESPACE=ns",
		"POD_UID=pod-uid",
		"NODE_NAME=node-1",
		"SA=vmctl",
		"POD_IP=10.250.0.1",
		"HOST_IP=127.0.0.1",
		"APP=vmctl",
		"NOTE=hi",
		"MISSING_LABEL=",
		"LITERAL=plain",
		// Only variables defined earlier expand; $$ escapes.
		"GREETING=hi-vmctl-0-on-node-1-$(LATER)-$(POD_NAME)",
		"LATER=late",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containerEnv() (-want +got):\n%s", diff)
	}
}

// TestContainerEnvResources: requests and limits in units of the divisor,
// rounded up, as scaffold's VMCTL_REQUESTS_* read them.
func TestContainerEnvResources(t *testing.T) {
	ref := func(name, res, divisor string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res, Divisor: resource.MustParse(divisor)},
		}}
	}
	c := &corev1.Container{Name: "agent", Env: []corev1.EnvVar{
		ref("CPU", "requests.cpu", "1m"),
		ref("MEMORY", "requests.memory", "1"),
		ref("CPU_LIMIT", "limits.cpu", "1"),
		ref("MEMORY_MI", "limits.memory", "1Mi"),
	}, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1110m"), corev1.ResourceMemory: resource.MustParse("12320Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m"), corev1.ResourceMemory: resource.MustParse("12352Mi")},
	}}
	got, err := containerEnv(envTestPod(), c, "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CPU=1110", "MEMORY=12918456320", "CPU_LIMIT=2", "MEMORY_MI=12352"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containerEnv() (-want +got):\n%s", diff)
	}
}

func TestContainerEnvUnsupported(t *testing.T) {
	tests := []struct {
		name      string
		container corev1.Container
		wantErr   string
	}{
		{
			name: "secret",
			container: corev1.Container{Name: "agent", Env: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
			}}}},
			wantErr: "env S: only value, fieldRef and resourceFieldRef",
		},
		{
			name:      "envFrom",
			container: corev1.Container{Name: "agent", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}},
			wantErr:   "envFrom is not supported",
		},
		{
			name:      "unknown field",
			container: corev1.Container{Name: "agent", Env: []corev1.EnvVar{fieldEnv("X", "metadata.generation")}},
			wantErr:   `fieldPath "metadata.generation" is not supported`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := containerEnv(envTestPod(), &tt.container, "", "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("containerEnv() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExpandVars(t *testing.T) {
	defined := map[string]string{"A": "a", "B": "b", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"$(EMPTY)", ""},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(A)$", "a$"},
	}
	for _, tt := range tests {
		if got := expandVars(tt.in, defined); got != tt.want {
			t.Errorf("expandVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAgentArgs(t *testing.T) {
	env := []string{"POD_NAMESPACE=ns", "EQ=a=b"}
	tests := []struct {
		name      string
		container corev1.Container
		want      []string
	}{
		{
			name:      "image entrypoint",
			container: corev1.Container{Args: []string{"proto", "--proto-namespace=$(POD_NAMESPACE)", "--x=$(EQ)"}},
			want:      []string{"agent", "proto", "--proto-namespace=ns", "--x=a=b"},
		},
		{
			name:      "explicit command",
			container: corev1.Container{Command: []string{"/kubectl-vmctl", "agent", "-n", "$(POD_NAMESPACE)"}, Args: []string{"proto"}},
			want:      []string{"agent", "-n", "ns", "proto"},
		},
		{
			name:      "no args",
			container: corev1.Container{},
			want:      []string{"agent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, agentArgs(&tt.container, env)); diff != "" {
				t.Errorf("agentArgs() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEmptyDirs: each emptyDir the container mounts is a directory of the
// Pod's UID, which the arguments that name its mount path point to; other
// volumes and other arguments are left as they are.
func TestEmptyDirs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}}}
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "state", MountPath: "/run/vmctl"}, {Name: "config", MountPath: "/etc/config"},
	}}
	podDir := t.TempDir()
	dirs, err := emptyDirs(pod, c, podDir)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(podDir, "volumes", "uid-1", "state")
	if diff := cmp.Diff(map[string]string{"/run/vmctl": state}, dirs); diff != "" {
		t.Errorf("emptyDirs() (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(state); err != nil || !fi.IsDir() {
		t.Errorf("%s is not a directory: %v", state, err)
	}
	got := mountedArgs([]string{"agent", "--state-dir=/run/vmctl", "/run/vmctl/x", "--other=/run/vmctl2", "--config=/etc/config"}, dirs)
	want := []string{"agent", "--state-dir=" + state, state + "/x", "--other=/run/vmctl2", "--config=/etc/config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mountedArgs() (-want +got):\n%s", diff)
	}
}
