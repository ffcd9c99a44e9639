package kube

import (
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigFlags are kubectl's kubeconfig flags (--kubeconfig, --context, -n,
// --server, --token, --as, ...) bound to client-go's clientcmd as
// cli-runtime's genericclioptions.ConfigFlags binds them, with the same
// names, help and meaning, for vmctl-agent: linking cli-runtime costs every
// agent's start its package initialisation. --cache-dir, discovery's cache,
// is left out: the agent makes no discovery client.
type ConfigFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	userExtra  []string

	once   sync.Once
	loader clientcmd.ClientConfig
}

// NewConfigFlags returns ConfigFlags with kubectl's defaults.
func NewConfigFlags() *ConfigFlags {
	return &ConfigFlags{overrides: clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}}
}

// AddFlags binds the flags to flags, as cli-runtime's ConfigFlags.AddFlags.
func (f *ConfigFlags) AddFlags(flags *pflag.FlagSet) {
	auth, cluster, kctx := &f.overrides.AuthInfo, &f.overrides.ClusterInfo, &f.overrides.Context
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	flags.StringVar(&auth.ClientCertificate, clientcmd.FlagCertFile, "", "Path to a client certificate file for TLS")
	flags.StringVar(&auth.ClientKey, clientcmd.FlagKeyFile, "", "Path to a client key file for TLS")
	flags.StringVar(&auth.Token, clientcmd.FlagBearerToken, "", "Bearer token for authentication to the API server")
	flags.StringVar(&auth.Impersonate, clientcmd.FlagImpersonate, "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	flags.StringVar(&auth.ImpersonateUID, clientcmd.FlagImpersonateUID, "", "UID to impersonate for the operation.")
	flags.StringArrayVar(&auth.ImpersonateGroups, clientcmd.FlagImpersonateGroup, nil, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	flags.StringArrayVar(&f.userExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	flags.StringVar(&kctx.Cluster, clientcmd.FlagClusterName, "", "The name of the kubeconfig cluster to use")
	flags.StringVar(&kctx.AuthInfo, clientcmd.FlagAuthInfoName, "", "The name of the kubeconfig user to use")
	flags.StringVarP(&kctx.Namespace, clientcmd.FlagNamespace, "n", "", "If present, the namespace scope for this CLI request")
	flags.StringVar(&f.overrides.CurrentContext, clientcmd.FlagContext, "", "The name of the kubeconfig context to use")
	flags.StringVarP(&cluster.Server, clientcmd.FlagAPIServer, "s", "", "The address and port of the Kubernetes API server")
	flags.StringVar(&cluster.TLSServerName, clientcmd.FlagTLSServerName, "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	flags.BoolVar(&cluster.InsecureSkipTLSVerify, clientcmd.FlagInsecure, false, "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	flags.StringVar(&cluster.CertificateAuthority, clientcmd.FlagCAFile, "", "Path to a cert file for the certificate authority")
	flags.StringVar(&f.overrides.Timeout, clientcmd.FlagTimeout, "0", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	flags.BoolVar(&cluster.DisableCompression, clientcmd.FlagDisableCompression, false, "If true, opt-out of response compression for all requests to the server")
}

// ToRawKubeConfigLoader returns the kubeconfig the flags amend, made on the
// first call, as cli-runtime's ConfigFlags makes it: in a Pod without a
// kubeconfig it gives the in-cluster configuration.
func (f *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	f.once.Do(func() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		// Compared against to tell "nothing configured", which selects the
		// in-cluster configuration.
		rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
		rules.ExplicitPath = f.kubeconfig
		overrides := f.overrides
		overrides.AuthInfo.ImpersonateUserExtra = userExtras(f.userExtra)
		f.loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
	})
	return f.loader
}

// userExtras reads --as-user-extra's key=value pairs, skipping those
// without "=", as kubectl does.
func userExtras(pairs []string) map[string][]string {
	if len(pairs) == 0 {
		return nil
	}
	extras := map[string][]string{}
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		extras[key] = append(extras[key], value)
	}
	return extras
}
