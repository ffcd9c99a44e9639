package styled

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWritePlain(t *testing.T) {
	var out bytes.Buffer
	rows := [][]Cell{
		{Text("pod-a"), {Text: "1/1", Tone: Good}, {Text: "", Tone: Bad}},
		{Text("evil\x1b[31m\rpod"), {Text: "0/1", Tone: Warn}, {Text: "VM missing", Tone: Bad}},
	}
	if err := WriteTable(&out, []string{"POD", "READY", "PROBLEM"}, rows, false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"POD               READY   PROBLEM\n" +
		"pod-a             1/1     \n" +
		"evil^[[31m\\rpod   0/1     VM missing\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("plain table (-want +got):\n%s", diff)
	}
}

func TestWriteColor(t *testing.T) {
	var out bytes.Buffer
	rows := [][]Cell{{Text("evil\x1b]0;title\x07"), {Text: "VM missing", Tone: Bad}}}
	if err := WriteTable(&out, []string{"POD", "PROBLEM"}, rows, true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "\x1b[") {
		t.Errorf("color table has no ANSI sequence:\n%q", got)
	}
	if !strings.Contains(got, "evil^[]0;title") {
		t.Errorf("cluster string not escaped:\n%q", got)
	}
	// The only raw ESC bytes are the ones lipgloss wrote for styles (SGR, "ESC[...m").
	for i := 0; i < len(got); i++ {
		if got[i] == 0x1b && (i+1 >= len(got) || got[i+1] != '[') {
			t.Fatalf("raw escape that is not an SGR sequence at %d in %q", i, got)
		}
	}
	if !strings.Contains(got, "VM missing") {
		t.Errorf("cell text missing:\n%q", got)
	}
}

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

func TestPaint(t *testing.T) {
	if got := Paint("-x", Bad, false); got != "-x" {
		t.Errorf("Paint without color = %q", got)
	}
	if got := Paint("-x", Bad, true); got == "-x" || !strings.Contains(got, "-x") {
		t.Errorf("Paint with color = %q", got)
	}
}
