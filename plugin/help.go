package plugin

import (
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// problemHelp lists docs for --help: each problem at two spaces, what it
// means from column 33 (under it when the problem is too long to leave a
// gap), wrapped at cmdutil.HelpWidth.
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
		line += strings.Repeat(" ", column-len(line)) + strings.ReplaceAll(cmdutil.Wrap(d.Short, cmdutil.HelpWidth-column), "\n", pad)
		b.WriteString(line + "\n")
	}
	return b.String()
}
