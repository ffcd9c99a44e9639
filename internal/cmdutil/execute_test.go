package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

// TestExecute: the exit code and what stderr says, for each kind of error
// a command returns.
func TestExecute(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{name: "success", err: nil, code: 0},
		{name: "an error", err: boom, code: 1, stderr: "error: boom\n"},
		{name: "a finding, said already", err: &ExitError{Code: 1}, code: 1},
		{name: "an error with its code, wrapped", err: fmt.Errorf("diff: %w", &ExitError{Code: 2, Err: boom}), code: 2, stderr: "error: diff: boom\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true,
				RunE: func(*cobra.Command, []string) error { return tt.err }}
			cmd.SetArgs([]string{})
			if code := Execute(cmd, IOStreams{Out: &out, ErrOut: &errOut}); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if errOut.String() != tt.stderr {
				t.Errorf("stderr = %q, want %q", errOut.String(), tt.stderr)
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
		})
	}
}
