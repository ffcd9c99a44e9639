package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestResolveIdentity(t *testing.T) {
	hostname := func() (string, error) { return "host-pod", nil }
	noSA := func() (string, bool) { return "", false }
	kubeconfigNS := func(ns string) func() (string, error) {
		return func() (string, error) { return ns, nil }
	}
	tests := []struct {
		name    string
		src     IdentitySources
		env     map[string]string
		want    Identity
		wantErr string
	}{{
		name: "downward API gives everything",
		env:  map[string]string{contract.EnvPodName: "vmctl-abc", contract.EnvPodNamespace: "apps", contract.EnvNodeName: "node-1", contract.EnvPodUID: "uid-1"},
		src:  IdentitySources{Hostname: hostname, ServiceAccountNamespace: func() (string, bool) { return "sa-ns", true }, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "vmctl-abc", PodNamespace: "apps", Node: "node-1", PodUID: "uid-1"},
	}, {
		name: "hostname override beats POD_NAME and the hostname",
		env:  map[string]string{contract.EnvPodName: "vmctl-abc"},
		src:  IdentitySources{HostnameOverride: "override", Hostname: hostname, ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "override", PodNamespace: "kc"},
	}, {
		name: "hostname when POD_NAME is unset",
		src:  IdentitySources{Hostname: hostname, ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "host-pod", PodNamespace: "kc"},
	}, {
		name: "the original design's /etc/podinfo/name beats the hostname",
		src: IdentitySources{PodInfoName: func() (string, bool) { return "vmctl-5d8f-x2x9z\n", true },
			Hostname: hostname, ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "vmctl-5d8f-x2x9z", PodNamespace: "kc"},
	}, {
		name: "POD_NAME beats /etc/podinfo/name",
		env:  map[string]string{contract.EnvPodName: "vmctl-abc"},
		src: IdentitySources{PodInfoName: func() (string, bool) { return "from-file", true },
			Hostname: hostname, ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "vmctl-abc", PodNamespace: "kc"},
	}, {
		name: "no /etc/podinfo/name, or an empty one: the hostname",
		src: IdentitySources{PodInfoName: func() (string, bool) { return " \n", true },
			Hostname: hostname, ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("kc")},
		want: Identity{PodName: "host-pod", PodNamespace: "kc"},
	}, {
		name: "empty and blank env values count as unset",
		env:  map[string]string{contract.EnvPodName: "", contract.EnvPodNamespace: "  ", contract.EnvNodeName: "", contract.EnvPodUID: ""},
		src:  IdentitySources{Hostname: hostname, ServiceAccountNamespace: func() (string, bool) { return "sa-ns\n", true }},
		want: Identity{PodName: "host-pod", PodNamespace: "sa-ns"},
	}, {
		name: "service account namespace beats the kubeconfig",
		env:  map[string]string{contract.EnvPodName: "p"},
		src: IdentitySources{ServiceAccountNamespace: func() (string, bool) { return "sa-ns", true },
			KubeconfigNamespace: func() (string, error) {
				t.Error("kubeconfig read although the service account namespace is known")
				return "", nil
			}},
		want: Identity{PodName: "p", PodNamespace: "sa-ns"},
	}, {
		name: "kubeconfig namespace outside a Pod",
		env:  map[string]string{contract.EnvPodName: "p", contract.EnvNodeName: "node-1"},
		src:  IdentitySources{ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("dev")},
		want: Identity{PodName: "p", PodNamespace: "dev", Node: "node-1"},
	}, {
		name: "default namespace when nothing says",
		env:  map[string]string{contract.EnvPodName: "p", contract.EnvPodUID: "uid-1"},
		src:  IdentitySources{ServiceAccountNamespace: noSA, KubeconfigNamespace: kubeconfigNS("")},
		want: Identity{PodName: "p", PodNamespace: "default", PodUID: "uid-1"},
	}, {
		name:    "hostname fails",
		src:     IdentitySources{Hostname: func() (string, error) { return "", errors.New("no uts") }},
		wantErr: "cannot tell the Pod's name from the hostname: no uts; set POD_NAME or --hostname-override",
	}, {
		name:    "no way to tell the name",
		src:     IdentitySources{Hostname: func() (string, error) { return "", nil }},
		wantErr: "cannot tell the Pod's name; set POD_NAME or --hostname-override",
	}, {
		name: "broken kubeconfig",
		env:  map[string]string{contract.EnvPodName: "p"},
		src: IdentitySources{ServiceAccountNamespace: noSA,
			KubeconfigNamespace: func() (string, error) { return "", errors.New("bad yaml") }},
		wantErr: "reading the namespace from the kubeconfig: bad yaml",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			src.LookupEnv = func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			}
			got, err := ResolveIdentity(src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveIdentity() error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveIdentity() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResolveIdentity() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdentityKnown(t *testing.T) {
	for _, tt := range []struct {
		id   Identity
		want bool
	}{
		{Identity{Node: "n", PodUID: "u"}, true},
		{Identity{Node: "n"}, false},
		{Identity{PodUID: "u"}, false},
	} {
		if got := tt.id.Known(); got != tt.want {
			t.Errorf("%+v.Known() = %v, want %v", tt.id, got, tt.want)
		}
	}
}
