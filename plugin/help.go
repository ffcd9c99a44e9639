package plugin

import (
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// helpWidth is the widest line of a generated help list, as of the
// hand-written help around it.
const helpWidth = 80

// problemHelp lists docs for --help: each problem at two spaces, what it
// means from column 33 (under it when the problem is too long to leave a
// gap), wrapped at helpWidth.
func problemHelp(docs []status.Doc) string {
	const indent, column = 2, 33
	var b strings.Builder
	for _, d := range docs {
		line := strings.Repeat(" ", indent) + d.Problem
		if len(line) > column-2 {
			b.WriteString(line + "\n")
			line = ""
		}
		pad := "\n" + strings.Repeat(" ", column)
		line += strings.Repeat(" ", column-len(line)) + strings.ReplaceAll(wrap(d.Short, helpWidth-column), "\n", pad)
		b.WriteString(line + "\n")
	}
	return b.String()
}

// stuckReasonsHelp names the /readyz words of a VM KubeVirt cannot start.
func stuckReasonsHelp() string {
	return wrap("When KubeVirt cannot start the VM, /readyz says why in one word ("+
		strings.Join(stuck.Reasons(), ", ")+
		") and a Warning Event of that reason gives the cause, as status's PROBLEM column does.", helpWidth)
}

// wrap breaks text into lines of at most width bytes, between words.
func wrap(text string, width int) string {
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
