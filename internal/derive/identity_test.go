package derive

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestVMSetsIdentity(t *testing.T) {
	efi := &kubevirtv1.Bootloader{EFI: &kubevirtv1.EFI{SecureBoot: ptr.To(false)}}
	masquerade := kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}

	for _, tc := range []struct {
		name  string
		proto func(*kubevirtv1.VirtualMachineInstanceSpec)
		want  func(*kubevirtv1.VirtualMachineInstanceSpec)
	}{
		{
			name: "firmware uuid and serial are the Pod's UID, the bootloader is kept",
			proto: func(s *kubevirtv1.VirtualMachineInstanceSpec) {
				s.Domain.Firmware = &kubevirtv1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223", Serial: "abc", Bootloader: efi}
			},
			want: func(s *kubevirtv1.VirtualMachineInstanceSpec) {
				s.Domain.Firmware = &kubevirtv1.Firmware{UUID: testPod().UID, Serial: string(testPod().UID), Bootloader: efi}
			},
		},
		{
			name: "no firmware gets the Pod's UID",
		},
		{
			name: "every interface's MAC address is cleared",
			proto: func(s *kubevirtv1.VirtualMachineInstanceSpec) {
				s.Domain.Devices.Interfaces = []kubevirtv1.Interface{
					{Name: "default", InterfaceBindingMethod: masquerade, MacAddress: "02:00:00:0a:0b:0c"},
					{Name: "second", MacAddress: "02:00:00:0a:0b:0d", PciAddress: "0000:81:01.0"},
				}
			},
			want: func(s *kubevirtv1.VirtualMachineInstanceSpec) {
				s.Domain.Devices.Interfaces = []kubevirtv1.Interface{
					{Name: "default", InterfaceBindingMethod: masquerade},
					{Name: "second", PciAddress: "0000:81:01.0"},
				}
			},
		},
		{
			name:  "a set hostname becomes the VM's name",
			proto: func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Hostname = "fedora"; s.Subdomain = "workers" },
			want: func(s *kubevirtv1.VirtualMachineInstanceSpec) {
				s.Hostname = "fedora-web-7c9d"
				s.Subdomain = "workers"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			if tc.proto != nil {
				tc.proto(&proto.Spec.Template.Spec)
			}
			want := testPrototype().Spec.Template.Spec.DeepCopy()
			want.Domain.Firmware = &kubevirtv1.Firmware{UUID: testPod().UID, Serial: string(testPod().UID)}
			if tc.want != nil {
				tc.want(want)
			}
			got := mustVM(t, proto, testPod(), Options{}).Spec.Template.Spec.DeepCopy()
			got.Affinity = nil         // pinning has its own test
			got.EvictionStrategy = nil // and the eviction strategy
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("template spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVMHostnameIsDNSLabel(t *testing.T) {
	proto := testPrototype()
	proto.Name = "fedora.v1"
	proto.Spec.Template.Spec.Hostname = "fedora"
	vm := mustVM(t, proto, testPod(), Options{})
	if diff := cmp.Diff("fedora-v1-web-7c9d", vm.Spec.Template.Spec.Hostname); diff != "" {
		t.Errorf("hostname (-want +got):\n%s", diff)
	}
}

func TestVMClearsRevisionNames(t *testing.T) {
	proto := testPrototype()
	proto.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.small", Kind: "VirtualMachineClusterInstancetype", RevisionName: "fedora-u1.small-abc-1"}
	proto.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora", RevisionName: "fedora-fedora-abc-1"}
	vm := mustVM(t, proto, testPod(), Options{})

	if diff := cmp.Diff(&kubevirtv1.InstancetypeMatcher{Name: "u1.small", Kind: "VirtualMachineClusterInstancetype"}, vm.Spec.Instancetype); diff != "" {
		t.Errorf("instancetype (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&kubevirtv1.PreferenceMatcher{Name: "fedora"}, vm.Spec.Preference); diff != "" {
		t.Errorf("preference (-want +got):\n%s", diff)
	}
}

func TestVMRunStrategy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		running     *bool
		runStrategy *kubevirtv1.VirtualMachineRunStrategy
	}{
		{name: "neither set"},
		{name: "halted", runStrategy: ptr.To(kubevirtv1.RunStrategyHalted)},
		{name: "manual", runStrategy: ptr.To(kubevirtv1.RunStrategyManual)},
		{name: "deprecated running false", running: ptr.To(false)},
		{name: "deprecated running true", running: ptr.To(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.Running = tc.running
			proto.Spec.RunStrategy = tc.runStrategy
			vm := mustVM(t, proto, testPod(), Options{})
			if diff := cmp.Diff(ptr.To(kubevirtv1.RunStrategyAlways), vm.Spec.RunStrategy); diff != "" {
				t.Errorf("runStrategy (-want +got):\n%s", diff)
			}
			if vm.Spec.Running != nil {
				t.Errorf("running = %v, want unset", *vm.Spec.Running)
			}
		})
	}
}

func TestVMStatefulSetIdentity(t *testing.T) {
	pod := Pod{Name: "web-0", Namespace: "vms", UID: "pod-uid-1", Node: "node-a"}
	for _, tc := range []struct {
		name                    string
		subdomain               string
		protoHost, protoSub     string
		wantHost, wantSub       string
		wantLabel, wantTemplate bool
	}{
		{name: "no subdomain: nothing set, as for a Deployment"},
		{name: "no subdomain keeps the prototype's, the hostname becomes the VM's name",
			protoHost: "fedora", protoSub: "workers", wantHost: "fedora-web-0", wantSub: "workers"},
		{name: "a subdomain: the Pod's name and the Service", subdomain: "web",
			wantHost: "web-0", wantSub: "web", wantLabel: true, wantTemplate: true},
		{name: "a subdomain beats the prototype's", subdomain: "web", protoHost: "fedora", protoSub: "workers",
			wantHost: "web-0", wantSub: "web", wantLabel: true, wantTemplate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.Template.Spec.Hostname, proto.Spec.Template.Spec.Subdomain = tc.protoHost, tc.protoSub
			vm := mustVM(t, proto, pod, Options{Subdomain: tc.subdomain})
			spec := vm.Spec.Template.Spec
			if spec.Hostname != tc.wantHost || spec.Subdomain != tc.wantSub {
				t.Errorf("hostname %q subdomain %q, want %q and %q", spec.Hostname, spec.Subdomain, tc.wantHost, tc.wantSub)
			}
			if got, ok := vm.Labels[contract.LabelSubdomain]; ok != tc.wantLabel || (ok && got != tc.subdomain) {
				t.Errorf("VM label %s = %q (present %v), want present %v", contract.LabelSubdomain, got, ok, tc.wantLabel)
			}
			if got, ok := vm.Spec.Template.ObjectMeta.Labels[contract.LabelSubdomain]; ok != tc.wantTemplate || (ok && got != tc.subdomain) {
				t.Errorf("VMI template label %s = %q (present %v), want present %v", contract.LabelSubdomain, got, ok, tc.wantTemplate)
			}
			if proto.Spec.Template.Spec.Hostname != tc.protoHost || proto.Labels[contract.LabelSubdomain] != "" {
				t.Error("the prototype was modified")
			}
		})
	}
}

func TestVMSubdomainNeedsDNSNames(t *testing.T) {
	for _, tc := range []struct {
		name, pod, subdomain, want string
	}{
		{"a Pod name with dots", "web.0", "web", `the Pod's name "web.0" cannot be the VM's hostname`},
		{"a Pod name too long for a hostname", "web-" + strings.Repeat("x", 60), "web", "more than a label value's 63"},
		{"a subdomain that is no Service name", "web-0", "Web_Svc", `subdomain "Web_Svc" is not a valid Service name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Name = tc.pod
			_, err := VM(testPrototype(), pod, Options{Subdomain: tc.subdomain})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VM() error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
