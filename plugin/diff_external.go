package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// externalDiffEnv names the program kubectl diff shows its diffs with.
const externalDiffEnv = "KUBECTL_EXTERNAL_DIFF"

// externalDiff shows diffs as kubectl diff does with KUBECTL_EXTERNAL_DIFF:
// the two versions of each object go into two directories, LIVE and
// MERGED, one file each, and the program runs once on both. Its rules are
// kubectl's (k8s.io/kubectl/pkg/cmd/diff's DiffProgram): the variable's
// first word is the program, and of the words after it only those made of
// letters, digits, "-" and "=" are passed on, before the two directories.
// That package is not imported: what it links adds 30 ms of
// initialisation to every start of kubectl-vmctl.
type externalDiff struct {
	command      string
	live, merged string
}

// safeDiffArg is what kubectl passes on of KUBECTL_EXTERNAL_DIFF's words.
var safeDiffArg = regexp.MustCompile(`^[a-zA-Z0-9-=]+$`)

// newExternalDiff makes the two directories for the program command names.
func newExternalDiff(command string) (*externalDiff, error) {
	d := &externalDiff{command: command}
	var err error
	if d.live, err = os.MkdirTemp("", "LIVE-"); err != nil {
		return nil, err
	}
	if d.merged, err = os.MkdirTemp("", "MERGED-"); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// add writes the two versions of one object as file.
func (d *externalDiff) add(file, live, merged string) error {
	for _, f := range []struct{ dir, doc string }{{d.live, live}, {d.merged, merged}} {
		if err := os.WriteFile(filepath.Join(f.dir, file), []byte(f.doc), 0o600); err != nil {
			return fmt.Errorf("write %s for %s: %w", file, externalDiffEnv, err)
		}
	}
	return nil
}

// run runs the program on the two directories, its output to out and
// errOut. Its exit status 1 says it found differences, which is no error.
func (d *externalDiff) run(ctx context.Context, out, errOut io.Writer) error {
	words := strings.Split(d.command, " ")
	var args []string
	for _, w := range words[1:] {
		if safeDiffArg.MatchString(w) {
			args = append(args, w)
		}
	}
	cmd := exec.CommandContext(ctx, words[0], append(args, d.live, d.merged)...)
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 1 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s=%q: %w", externalDiffEnv, d.command, err)
	}
	return nil
}

// close removes the two directories.
func (d *externalDiff) close() {
	for _, dir := range []string{d.live, d.merged} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}
