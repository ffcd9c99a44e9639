// Package cmdutil is what kubectl-vmctl's commands and vmctl-agent share, in
// the manner of kubectl's pkg/cmd/util: the streams, one Execute with one
// error printer and kubectl's exit codes, the kubeconfig's namespace, and
// help text wrapping. It links no cli-runtime, kubectl or lipgloss, so that
// vmctl-agent does not either.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// IOStreams are a command's standard streams: cli-runtime's
// genericiooptions.IOStreams, to which it converts, without cli-runtime.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Execute runs cmd and returns the process exit code: 0 on success, the code of
// an ExitError, else 1 with the error printed as kubectl prints it.
func Execute(cmd *cobra.Command, streams IOStreams) int {
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err == nil {
			return exit.Code
		}
		code = exit.Code
	}
	_, _ = fmt.Fprintln(streams.ErrOut, errorMessage(err))
	return code
}

// errorMessage is err as kubectl prints it, with kubectl's hint when the API
// server refused the connection: no kubeconfig at all means localhost:8080,
// which rarely answers. kubectl's own StandardErrorMessage cannot see through
// the context vmctl wraps around its errors.
func errorMessage(err error) string {
	msg := "error: " + err.Error()
	var uerr *url.Error
	if utilnet.IsConnectionRefused(err) && errors.As(err, &uerr) {
		host := uerr.URL
		if u, perr := url.Parse(uerr.URL); perr == nil {
			host = u.Host
		}
		msg += fmt.Sprintf("\nThe connection to the server %s was refused - did you specify the right host or port? (check --kubeconfig, --context and --server; `kubectl cluster-info` tells)", host)
	}
	return msg
}

// ExitError carries a specific exit code, as `kubectl diff` uses 1 for
// "differences found" and above 1 for errors.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }
