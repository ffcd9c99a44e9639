package styled

import "charm.land/lipgloss/v2"

// Tone is the meaning of a table cell or a painted line, which sets its
// color on a terminal.
type Tone int

// The tones a cell or line can have.
const (
	Plain Tone = iota
	Good       // green: ready, in place
	Warn       // yellow: not there yet
	Bad        // red: something is wrong
	Faint      // grey: absent values such as <none>
)

func toneStyle(s lipgloss.Style, t Tone) lipgloss.Style {
	switch t {
	case Good:
		return s.Foreground(lipgloss.Green)
	case Warn:
		return s.Foreground(lipgloss.Yellow)
	case Bad:
		return s.Foreground(lipgloss.Red)
	case Faint:
		return s.Foreground(lipgloss.BrightBlack)
	}
	return s
}

// Paint renders s in the color of tone when color is true, for output that
// is not a table, such as diff lines. It does not escape s.
func Paint(s string, tone Tone, color bool) string {
	if !color || tone == Plain {
		return s
	}
	return toneStyle(lipgloss.NewStyle(), tone).Render(s)
}
