package agent

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// ServiceAccountNamespaceFile holds the Pod's namespace in every Pod that
// mounts a service account token.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// PodInfoNameFile holds the Pod's name where a downwardAPI volume "podinfo"
// with the item "name" is mounted at /etc/podinfo, as the original vmctl
// design's manifests (through a PodPreset) did.
const PodInfoNameFile = "/etc/podinfo/name"

// Identity is the Pod the agent runs as.
type Identity struct {
	PodName      string
	PodNamespace string
	// Node and PodUID are empty when the environment does not give them; the
	// agent then GETs its Pod once to learn them.
	Node   string
	PodUID types.UID
}

// Known reports whether Node and PodUID are both known, so no Pod GET is needed.
func (id Identity) Known() bool {
	return id.Node != "" && id.PodUID != ""
}

// IdentitySources are the places ResolveIdentity looks, each a function so
// tests need no environment, files or kubeconfig.
type IdentitySources struct {
	// HostnameOverride is --hostname-override; it wins over everything.
	HostnameOverride string
	// LookupEnv is os.LookupEnv. Empty values count as unset.
	LookupEnv func(key string) (string, bool)
	// PodInfoName returns the content of PodInfoNameFile, and false when
	// there is no such file.
	PodInfoName func() (string, bool)
	// Hostname is os.Hostname, the Pod's name in a Pod without hostNetwork.
	Hostname func() (string, error)
	// ServiceAccountNamespace returns the content of
	// ServiceAccountNamespaceFile, and false outside a Pod.
	ServiceAccountNamespace func() (string, bool)
	// KubeconfigNamespace returns the kubeconfig context's namespace
	// (including -n), as ConfigFlags.ToRawKubeConfigLoader().Namespace().
	KubeconfigNamespace func() (string, error)
}

// ResolveIdentity works out which Pod the agent runs as.
//
// Pod name: HostnameOverride, else POD_NAME, else PodInfoNameFile, else
// the hostname (which is not the Pod's name in a Pod with hostNetwork, and
// is cut to 63 characters). Namespace:
// POD_NAMESPACE, else the service account namespace file, else the
// kubeconfig's namespace, else "default". Node and UID: NODE_NAME and POD_UID
// when set, else left empty for the agent to look up.
func ResolveIdentity(src IdentitySources) (Identity, error) {
	env := func(key string) string {
		if src.LookupEnv == nil {
			return ""
		}
		v, _ := src.LookupEnv(key)
		return strings.TrimSpace(v)
	}

	var id Identity
	switch {
	case src.HostnameOverride != "":
		id.PodName = src.HostnameOverride
	case env(contract.EnvPodName) != "":
		id.PodName = env(contract.EnvPodName)
	case podInfoName(src) != "":
		id.PodName = podInfoName(src)
	case src.Hostname != nil:
		h, err := src.Hostname()
		if err != nil {
			return Identity{}, fmt.Errorf("cannot tell the Pod's name from the hostname: %w; set %s or --hostname-override", err, contract.EnvPodName)
		}
		id.PodName = strings.TrimSpace(h)
	}
	if id.PodName == "" {
		return Identity{}, errors.New("cannot tell the Pod's name; set " + contract.EnvPodName + " or --hostname-override")
	}

	id.PodNamespace = env(contract.EnvPodNamespace)
	if id.PodNamespace == "" && src.ServiceAccountNamespace != nil {
		if ns, ok := src.ServiceAccountNamespace(); ok {
			id.PodNamespace = strings.TrimSpace(ns)
		}
	}
	if id.PodNamespace == "" && src.KubeconfigNamespace != nil {
		ns, err := src.KubeconfigNamespace()
		if err != nil {
			return Identity{}, fmt.Errorf("reading the namespace from the kubeconfig: %w; set %s or fix the kubeconfig", err, contract.EnvPodNamespace)
		}
		id.PodNamespace = strings.TrimSpace(ns)
	}
	if id.PodNamespace == "" {
		id.PodNamespace = "default"
	}

	id.Node = env(contract.EnvNodeName)
	id.PodUID = types.UID(env(contract.EnvPodUID))
	return id, nil
}

// podInfoName is the trimmed content of PodInfoNameFile, or "".
func podInfoName(src IdentitySources) string {
	if src.PodInfoName == nil {
		return ""
	}
	name, ok := src.PodInfoName()
	if !ok {
		return ""
	}
	return strings.TrimSpace(name)
}
