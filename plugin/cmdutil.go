package plugin

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// What every command shares: where it works (-n, -A, --proto-namespace, the
// kubeconfig), how it names a prototype, and its exit code.

// scopeNamespace resolves -n and -A: "" for all namespaces, else
// cmdutil.ContextNamespace.
func scopeNamespace(f kube.Factory, all bool) (string, error) {
	if all {
		return "", nil
	}
	return cmdutil.ContextNamespace(f)
}

// prototypeNamespace is where PROTOTYPE lives: --proto-namespace if the
// command has it and it is set, else cmdutil.ContextNamespace.
func prototypeNamespace(cmd *cobra.Command, f kube.Factory) (string, error) {
	if f := cmd.Flag("proto-namespace"); f != nil && f.Value.String() != "" {
		return f.Value.String(), nil
	}
	return cmdutil.ContextNamespace(f)
}

// inNamespace phrases a scope as kubectl does in "No resources found ...".
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in " + ns + " namespace"
}

// prototypeArg resolves the optional PROTOTYPE argument and --prototype.
func prototypeArg(args []string, flag string) (string, error) {
	if len(args) == 0 {
		return flag, nil
	}
	if flag != "" && flag != args[0] {
		return "", fmt.Errorf("PROTOTYPE %q and --prototype %q differ; give one", args[0], flag)
	}
	return args[0], nil
}

// noPrototype says that there is no prototype name in namespace (any
// namespace when empty) and what to do, for commands given a PROTOTYPE
// that find nothing of it.
func noPrototype(namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("no VM %s in any namespace: check the prototype's name", name)
	}
	return fmt.Sprintf("no VM %s in %s namespace: check the prototype's name, or pass -n or -A", name, namespace)
}

// withExitCode makes err exit with code, for commands whose exit 1 means a
// finding (drift, problems) and so whose errors exit 2, as `kubectl diff`.
// An err that already carries its code keeps it.
func withExitCode(code int, err error) error {
	var exit *cmdutil.ExitError
	if err == nil || errors.As(err, &exit) {
		return err
	}
	return &cmdutil.ExitError{Code: code, Err: err}
}
