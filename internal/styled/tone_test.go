package styled

import (
	"strings"
	"testing"
)

func TestPaint(t *testing.T) {
	if got := Paint("-x", Bad, false); got != "-x" {
		t.Errorf("Paint without color = %q", got)
	}
	if got := Paint("-x", Bad, true); got == "-x" || !strings.Contains(got, "-x") {
		t.Errorf("Paint with color = %q", got)
	}
}
