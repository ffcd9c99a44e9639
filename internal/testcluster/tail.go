package testcluster

import (
	"bytes"
	"os"
)

// Tail returns the last n lines of the file at path, or why it cannot: for
// error messages, which a log's end explains best.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
