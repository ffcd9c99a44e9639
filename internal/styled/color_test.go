package styled

import (
	"bytes"
	"os"
	"testing"
)

func TestUseColor(t *testing.T) {
	tests := []struct {
		name     string
		mode     ColorMode
		terminal bool
		env      map[string]string
		want     bool
	}{
		{name: "always wins over a pipe and NO_COLOR", mode: ColorAlways, env: map[string]string{"NO_COLOR": "1"}, want: true},
		{name: "never wins over a terminal", mode: ColorNever, terminal: true, want: false},
		{name: "auto on a terminal", mode: ColorAuto, terminal: true, env: map[string]string{"TERM": "xterm-256color"}, want: true},
		{name: "auto on a pipe", mode: ColorAuto, want: false},
		{name: "auto with NO_COLOR", mode: ColorAuto, terminal: true, env: map[string]string{"NO_COLOR": "1"}, want: false},
		{name: "auto with TERM=dumb", mode: ColorAuto, terminal: true, env: map[string]string{"TERM": "dumb"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UseColor(tt.mode, tt.terminal, func(k string) string { return tt.env[k] })
			if got != tt.want {
				t.Errorf("UseColor = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull) // a file, but not a terminal
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("IsTerminal is true for /dev/null or a buffer")
	}
}

func TestParseColorMode(t *testing.T) {
	for _, s := range []string{"auto", "always", "never"} {
		if _, err := ParseColorMode(s); err != nil {
			t.Errorf("ParseColorMode(%q): %v", s, err)
		}
	}
	if _, err := ParseColorMode("sometimes"); err == nil {
		t.Error("ParseColorMode(sometimes) did not fail")
	}
}
