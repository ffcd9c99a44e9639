package plugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// TestScaffoldReservation checks when scaffold sizes the agents for their
// VMs, and what it says when it does not: on a server older than 1.35 and
// with --reserve=false it warns and keeps the agent's own requests; when
// the prototype's instancetype cannot be expanded it fails, as there is no
// revision to pin.
func TestScaffoldReservation(t *testing.T) {
	proto := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"},
		Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
	typed := proto.DeepCopy()
	typed.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.large"}
	tests := []struct {
		name     string
		server   string
		proto    *kubevirtv1.VirtualMachine
		noCR     bool
		args     []string
		reserves bool
		stderr   string // a substring; "" means none at all
		err      string
	}{
		{name: "reserves", server: "v1.35.0", proto: proto, reserves: true},
		{name: "no KubeVirt CR", server: "v1.35.0", proto: proto, noCR: true, reserves: true,
			stderr: "Warning: no KubeVirt CR has a status.phase, so vmctl cannot tell KubeVirt's release: the reservation follows KubeVirt v1.9's defaults\n"},
		{name: "old server", server: "v1.34.2", proto: proto,
			stderr: "Warning: the server runs Kubernetes v1.34.2, older than 1.35, whose Pods cannot resize in place: " + notCounted},
		{name: "--reserve=false", server: "v1.36.3", proto: proto, args: []string{"--reserve=false"},
			stderr: "Warning: --reserve=false: " + notCounted},
		// The revision scaffold pins has its instancetype expanded, which
		// the fake API cannot do; it stands for one KubeVirt cannot
		// expand, as when the instancetype is missing.
		{name: "instancetype not expanded", server: "v1.36.3", proto: typed,
			err: "expand the instancetype and preference of VM vms/testvm: "},
		{name: "instancetype not expanded, --reserve=false", server: "v1.36.3", proto: typed, args: []string{"--reserve=false"},
			err: "expand the instancetype and preference of VM vms/testvm: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewClientset()
			serves(kube, tt.server)
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			o := NewScaffoldOptions(streams)
			objs := []runtime.Object{tt.proto}
			if !tt.noCR {
				objs = append(objs, deployedKubeVirt("v1.9.0"))
			}
			f := fakeapi.NewFactory(t, "vms", kube, kubevirtfake.NewSimpleClientset(objs...))
			err := opRun(t.Context(), f, newCmdScaffold(f, o), append([]string{"deployment", "testvm", "-n", "vms"}, tt.args...)...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := errOut.String(); tt.stderr == "" && got != "" || !strings.Contains(got, tt.stderr) {
				t.Errorf("stderr %q, want %q", got, tt.stderr)
			}
			if got := strings.Contains(out.String(), contract.AnnotationReservation); got != tt.reserves {
				t.Errorf("reserves: %v, want %v:\n%s", got, tt.reserves, out)
			}
			if got := strings.Contains(out.String(), "pods/resize"); got != tt.reserves {
				t.Errorf("may resize Pods: %v, want %v", got, tt.reserves)
			}
		})
	}
}

// deployedKubeVirt is a KubeVirt CR as virt-operator leaves it once it
// deployed KubeVirt version v: Deployed, with the version observed.
func deployedKubeVirt(v string) *kubevirtv1.KubeVirt {
	return &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Status:     kubevirtv1.KubeVirtStatus{Phase: kubevirtv1.KubeVirtPhaseDeployed, ObservedKubeVirtVersion: v},
	}
}
