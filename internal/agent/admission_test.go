package agent

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What kube-apiserver 1.36 answered the agents of the 1,000-operation soak
// for up to 30 s after each of its restarts, word for word.
func notSetUpErr() error {
	return apierrors.NewForbidden(vmResource.GroupResource(), testVM, errors.New(
		"ValidatingAdmissionPolicy 'vmctl-testvm.default' denied request: failed to configure policy: "+
			"failed to find resource referenced by paramKind: 'kubevirt.io/v1, Kind=VirtualMachine'"))
}

func TestDeniedHint(t *testing.T) {
	syncing := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `virtualmachines.kubevirt.io "testvm-vmctl-abc" is invalid: : ValidatingAdmissionPolicy 'vmctl-testvm.default' with binding ` +
			"'vmctl-testvm.default' denied request: failed to configure binding: paramKind " +
			"`&ParamKind{APIVersion:kubevirt.io/v1,Kind:VirtualMachine,}` not yet synced to use for admission",
	}}
	judged := apierrors.NewForbidden(vmResource.GroupResource(), testVM, errors.New(
		"ValidatingAdmissionPolicy 'vmctl-testvm.default' with binding 'vmctl-testvm.default' denied request: "+
			"the VirtualMachine's name is not testvm-<pod>: a vmctl agent may only create the one VM named for its own Pod"))
	// The prototype is gone: not a wait of 30 s.
	noParams := apierrors.NewForbidden(vmResource.GroupResource(), testVM, errors.New(
		"ValidatingAdmissionPolicy 'vmctl-testvm.default' with binding 'vmctl-testvm.default' denied request: "+
			"failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"))
	rbac := apierrors.NewForbidden(vmResource.GroupResource(), testVM, errors.New(
		`User "system:serviceaccount:default:vmctl-testvm" cannot create resource "virtualmachines" in API group "kubevirt.io" in the namespace "default"`))

	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"policy not set up yet", notSetUpErr(), "; the API server has not yet set up the admission policy for VMs, as happens for up to 30 s after it starts (kubernetes/kubernetes#124237); retrying"},
		{"policy parameters still syncing", syncing, "; the API server has not yet set up the admission policy for VMs, as happens for up to 30 s after it starts (kubernetes/kubernetes#124237); retrying"},
		{"the policy's own judgement", judged, ""},
		{"no prototype for the policy", noParams, ""},
		{"RBAC", rbac, "; grant the Pod's service account create on virtualmachines.kubevirt.io"},
		{"not a denial", apierrors.NewServiceUnavailable("etcd leader changed"), ""},
	} {
		if got := deniedHint(tt.err, "create on virtualmachines.kubevirt.io"); got != tt.want {
			t.Errorf("%s: hint %q, want %q", tt.name, got, tt.want)
		}
	}
}

// While the API server is still setting up the admission policy, the agent
// says so, and not to grant RBAC, and makes its VM once the policy answers.
func TestCreateWhileAdmissionPolicyIsNotSetUp(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	var denials atomic.Int32
	h.api.fail = func(req string) error {
		if strings.HasPrefix(req, "create ") && denials.Add(1) <= 3 {
			return notSetUpErr()
		}
		return nil
	}
	h.start()
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonCreateFailed)
	if !strings.Contains(ev.Message, "has not yet set up the admission policy") || strings.Contains(ev.Message, "grant") {
		t.Errorf("Event %q: want it to say the policy is not set up yet, and not to grant RBAC", ev.Message)
	}
	h.eventually("the VM is made once the policy answers", func() bool { return h.api.object(testVM) != nil })
	if n := h.api.count("create "); n != 4 {
		t.Errorf("%d creates, want 4: three denied, one made", n)
	}
}
