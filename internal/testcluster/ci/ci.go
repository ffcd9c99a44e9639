// Package ci is how a test that cannot run here says so: it skips on a
// developer's machine, and fails in CI, where what the tests need is
// installed (hack/node-deps.sh) and they run as root, so a test that
// cannot run is a test that did not check what it claims.
package ci

import (
	"os"
	"testing"
)

// Env is the variable .ci/run sets: the tests run in CI.
const Env = "VMCTL_CI"

// Skip skips t for reason, unless Env is set: then t fails.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(Env) != "" {
		t.Fatalf("%s (%s is set: in CI a test that cannot run fails)", reason, Env)
	}
	t.Skip(reason)
}
