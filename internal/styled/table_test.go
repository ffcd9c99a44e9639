package styled

import (
	"bytes"
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
