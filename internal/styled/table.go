package styled

import (
	"fmt"
	"io"
	"strings"

	"charm.land/lipgloss/v2"
	lgtable "charm.land/lipgloss/v2/table"
	"k8s.io/cli-runtime/pkg/printers"
)

// Cell is one table cell. Text may come from the cluster; WriteTable escapes it.
type Cell struct {
	Text string
	Tone Tone
}

// Text returns a Plain cell.
func Text(s string) Cell { return Cell{Text: s} }

// WriteTable prints headers and rows to w: as a lipgloss table with colored
// cells when color is true, else as kubectl-style tab-aligned columns with no
// ANSI codes at all. Every cell is passed through printers.EscapeTerminal so
// names and messages from the cluster cannot move the cursor or recolor the
// terminal.
func WriteTable(w io.Writer, headers []string, rows [][]Cell, color bool) error {
	if color {
		return writeColor(w, headers, rows)
	}
	return writePlain(w, headers, rows)
}

func writePlain(w io.Writer, headers []string, rows [][]Cell) error {
	tw := printers.GetNewTabWriter(w)
	if _, err := fmt.Fprintln(tw, strings.Join(escapeAll(headers), "\t")); err != nil {
		return err
	}
	for _, row := range rows {
		texts := make([]string, len(row))
		for i, c := range row {
			texts[i] = printers.EscapeTerminal(c.Text)
		}
		if _, err := fmt.Fprintln(tw, strings.Join(texts, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func writeColor(w io.Writer, headers []string, rows [][]Cell) error {
	data := make([][]string, len(rows))
	for i, row := range rows {
		data[i] = make([]string, len(row))
		for j, c := range row {
			data[i][j] = printers.EscapeTerminal(c.Text)
		}
	}
	cell := lipgloss.NewStyle().PaddingRight(3)
	t := lgtable.New().
		Headers(escapeAll(headers)...).
		Rows(data...).
		Border(lipgloss.NormalBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderColumn(false).BorderHeader(true).
		BorderStyle(lipgloss.NewStyle().Foreground(lipgloss.BrightBlack)).
		StyleFunc(func(r, c int) lipgloss.Style {
			if r == lgtable.HeaderRow {
				return cell.Bold(true)
			}
			if r < 0 || r >= len(rows) || c >= len(rows[r]) {
				return cell
			}
			return toneStyle(cell, rows[r][c].Tone)
		})
	_, err := fmt.Fprintln(w, t.Render())
	return err
}

func escapeAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = printers.EscapeTerminal(s)
	}
	return out
}
