// Package styled is the human output of vmctl's operator commands, styled
// on a terminal and plain in a pipe: tables (a colored lipgloss table, or
// aligned columns as kubectl's printers.GetNewTabWriter makes them), lines
// painted in a Tone such as diff's, and the --color choice that decides
// between the two.
package styled

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/printers"
)

// ColorMode is the value of a --color flag.
type ColorMode string

// The values --color accepts.
const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// ParseColorMode checks the value of a --color flag.
func ParseColorMode(s string) (ColorMode, error) {
	switch m := ColorMode(s); m {
	case ColorAuto, ColorAlways, ColorNever:
		return m, nil
	}
	return "", fmt.Errorf("--color must be auto, always or never, not %q", s)
}

// UseColor decides once whether output is colored: always and never win;
// auto colors only a terminal (see IsTerminal), and not when NO_COLOR is set
// (any value, see no-color.org) or TERM is dumb. getenv is os.Getenv outside
// tests.
func UseColor(mode ColorMode, terminal bool, getenv func(string) string) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	return terminal
}

// IsTerminal reports whether w is a terminal (an *os.File on a TTY).
func IsTerminal(w io.Writer) bool {
	return printers.IsTerminal(w)
}
