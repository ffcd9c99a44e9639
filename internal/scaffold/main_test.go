package scaffold

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps what the admission plugin's informers log at info level
// on each start out of the tests' and benchmarks' output; errors still
// go to stderr.
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
