package cmdutil

import "strings"

// HelpWidth is the widest line of a generated help list, as of the
// hand-written help around it.
const HelpWidth = 80

// Wrap breaks text into lines of at most width bytes, between words.
func Wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
