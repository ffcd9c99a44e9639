package scaffold

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		in      string
		want    Kind
		wantErr bool
	}{
		{in: "deployment", want: KindDeployment},
		{in: "deploy", want: KindDeployment},
		{in: "Deployments", want: KindDeployment},
		{in: "daemonset", want: KindDaemonSet},
		{in: "ds", want: KindDaemonSet},
		{in: "statefulset", want: KindStatefulSet},
		{in: "sts", want: KindStatefulSet},
		{in: "StatefulSet", want: KindStatefulSet},
		{in: "replicaset", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseKind(tt.in)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), ValidKinds) {
					t.Fatalf("ParseKind(%q) error = %v, want one listing %q", tt.in, err, ValidKinds)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseKind(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseServicePort(t *testing.T) {
	tests := []struct {
		in      string
		want    *ServicePort
		wantErr string
	}{
		{in: "80", want: &ServicePort{Port: 80}},
		{in: "80:8080", want: &ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		{in: "443:https", want: &ServicePort{Port: 443, TargetPort: intstr.FromString("https")}},
		{in: "", wantErr: "invalid service port"},
		{in: "0", wantErr: "invalid service port"},
		{in: "65536", wantErr: "invalid service port"},
		{in: "http", wantErr: "invalid service port"},
		{in: "80:", wantErr: "TARGETPORT after ':' is empty"},
		{in: "80:0", wantErr: "invalid service target port"},
		{in: "80:70000", wantErr: "invalid service target port"},
		{in: "80:Not_A_Name", wantErr: "invalid service target port"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseServicePort(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseServicePort(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseServicePort(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseMinAvailable(t *testing.T) {
	tests := []struct {
		in      string
		want    intstr.IntOrString
		wantErr bool
	}{
		{in: "0", want: intstr.FromInt32(0)},
		{in: "2", want: intstr.FromInt32(2)},
		{in: "50%", want: intstr.FromString("50%")},
		{in: "100%", want: intstr.FromString("100%")},
		{in: "-1", wantErr: true},
		{in: "101%", wantErr: true},
		{in: "1.5", wantErr: true},
		{in: "half", wantErr: true},
		{in: "%", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMinAvailable(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseMinAvailable(%q) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("ParseMinAvailable(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNewParams(t *testing.T) {
	p := NewParams(KindDaemonSet, "testvm", "vms")
	if p.Name != "vmctl-testvm" || p.Replicas != 1 || p.GracePeriodSeconds != 180 || p.Version == "" ||
		p.Image != ImageRepository+":"+imageTag(p.Version) {
		t.Errorf("NewParams = %+v, want name vmctl-testvm, 1 replica, 180s and this build's version and image", p)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("NewParams(...).Validate() = %v, want nil", err)
	}
}

func TestDefaultImage(t *testing.T) {
	tests := map[string]string{
		"v1.2.3": ImageRepository + ":v1.2.3",
		"v0.0.0-20260101120000-0123456789ab+dirty": ImageRepository + ":v0.0.0-20260101120000-0123456789ab_dirty",
		"v2.0.0+incompatible":                      ImageRepository + ":v2.0.0_incompatible",
	}
	for in, want := range tests {
		if got := DefaultImage(in); got != want {
			t.Errorf("DefaultImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{in: "v1.2.3", max: 63, want: "v1.2.3"},
		{in: "v1+dirty", max: 63, want: "v1_dirty"},
		{in: "+x+", max: 63, want: "x"},
		{in: "abc-def", max: 4, want: "abc"},
		{in: "ü", max: 63, want: ""},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in, tt.max); got != tt.want {
			t.Errorf("sanitize(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// validParams is a complete, valid Params with a fixed version, pinned to
// testRevision.
func validParams(kind Kind) Params {
	return Params{
		Kind:               kind,
		Prototype:          "testvm",
		Name:               "vmctl-testvm",
		Namespace:          "vms",
		Image:              "example.com/vmctl:test",
		Version:            "v1.2.3",
		Replicas:           1,
		GracePeriodSeconds: 180,
		Snapshot:           testRevision(),
		RevisionHash:       testRevisionHash,
	}
}

// testRevision is a VM revision of prototype vms/testvm, at generation 1,
// named testRevisionHash; tests that need what it holds set their own.
func testRevision() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", Generation: 1},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted)}}
}

const testRevisionHash = "0123456789"

func TestValidate(t *testing.T) {
	minAvail := func(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }
	tests := []struct {
		name    string
		change  func(*Params)
		wantErr []string // each must appear; none means valid
	}{
		{name: "valid", change: func(*Params) {}},
		{name: "dotted prototype", change: func(p *Params) { p.Prototype = "web.v2" }},
		{name: "long prototype with service and policy", change: func(p *Params) {
			p.Prototype = strings.Repeat("a", 100)
			p.Service = &ServicePort{Port: 80}
			p.AdmissionPolicy = true
		}},
		{name: "all extras", change: func(p *Params) {
			p.Service = &ServicePort{Port: 80, TargetPort: intstr.FromString("http")}
			p.PDBMinAvailable = minAvail("50%")
			p.ProtoNamespace = "protos"
			p.Replicas = 0
		}},
		{name: "unknown kind", change: func(p *Params) { p.Kind = "ReplicaSet" }, wantErr: []string{`unknown workload kind "ReplicaSet"`}},
		{name: "bad prototype", change: func(p *Params) { p.Prototype = "Test_VM" }, wantErr: []string{`invalid prototype name "Test_VM"`}},
		{name: "empty prototype", change: func(p *Params) { p.Prototype = "" }, wantErr: []string{`invalid prototype name ""`}},
		{name: "bad name", change: func(p *Params) { p.Name = "1vm" }, wantErr: []string{`invalid name "1vm"`, "pass --name"}},
		{name: "dotted name", change: func(p *Params) { p.Name = "vmctl-web.v2" }, wantErr: []string{`invalid name "vmctl-web.v2"`}},
		{name: "long statefulset name", change: func(p *Params) {
			p.Kind = KindStatefulSet
			p.Name = "s" + strings.Repeat("x", 52)
		}, wantErr: []string{"longer than 52 characters"}},
		{name: "long service name", change: func(p *Params) {
			p.Name = "s" + strings.Repeat("x", 60)
			p.Service = &ServicePort{Port: 80}
		}, wantErr: []string{`service name "s` + strings.Repeat("x", 60) + `-vms" is longer than 63`}},
		{name: "bad namespace", change: func(p *Params) { p.Namespace = "" }, wantErr: []string{`invalid namespace ""`, "pass -n"}},
		{name: "bad proto namespace", change: func(p *Params) { p.ProtoNamespace = "a.b" }, wantErr: []string{`invalid prototype namespace "a.b"`}},
		{name: "no image", change: func(p *Params) { p.Image = "" }, wantErr: []string{`invalid image ""`, "pass --image"}},
		{name: "negative replicas", change: func(p *Params) { p.Replicas = -1 }, wantErr: []string{"invalid replicas -1"}},
		{name: "short grace", change: func(p *Params) { p.GracePeriodSeconds = 14 }, wantErr: []string{"grace period 14s is too short", "at least 15s"}},
		{name: "bad service port", change: func(p *Params) { p.Service = &ServicePort{Port: 0} }, wantErr: []string{"invalid service port 0"}},
		{name: "bad pdb", change: func(p *Params) { p.PDBMinAvailable = minAvail("-2") }, wantErr: []string{"invalid PodDisruptionBudget minAvailable -2"}},
		{name: "every problem at once", change: func(p *Params) {
			p.Name = "X"
			p.Namespace = "Y"
			p.GracePeriodSeconds = 0
		}, wantErr: []string{`invalid name "X"`, `invalid namespace "Y"`, "grace period 0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			tt.change(&p)
			err := p.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
			if _, berr := Build(p); berr == nil {
				t.Errorf("Build accepted params that Validate rejects")
			}
		})
	}
}
