//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestREADME runs the ```console blocks of README.md and of each page under
// docs/ that has them, in order, in the default namespace, as a user would
// type them, and checks that each command prints what the page shows. Each
// page starts from a clean namespace. Columns may be aligned differently and
// ages, node names, generated names, UIDs, log headers, loopback ports and
// the build's version may differ; everything else must match. A line "..."
// ends a shown output early: the rest is not checked.
//
// VMCTL_UPDATE_README=1 writes the real output into the pages instead.
func TestREADME(t *testing.T) {
	pages := executedPages(t)
	if len(pages) < 2 {
		t.Fatalf("want README.md and at least one page under docs/ with ```console blocks, found %v", pages)
	}
	for _, page := range pages {
		t.Run(page, func(t *testing.T) { runPage(t, page) })
	}
}

// executedPages are README.md and the pages under docs/ that have ```console
// blocks, relative to the repository's root.
func executedPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(repoFile("docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	pages := []string{"README.md"}
	for _, d := range docs {
		src, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(consoleBlocks(string(src))) > 0 {
			pages = append(pages, filepath.Join("docs", filepath.Base(d)))
		}
	}
	return pages
}

// runPage runs the ```console blocks of one page from a clean default
// namespace, and cleans up after them.
func runPage(t *testing.T, page string) {
	path := repoFile(page)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := consoleBlocks(string(src))
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```console blocks", page)
	}
	t.Cleanup(func() { cleanupREADME(t) })
	cleanupREADME(t)

	update := os.Getenv("VMCTL_UPDATE_README") != ""
	for i := range blocks {
		for j := range blocks[i].steps {
			s := &blocks[i].steps[j]
			got := runREADMECommand(t, s.command)
			if update {
				s.output = keepShown(got, s.output)
				continue
			}
			if diff := compareOutput(s.output, got); diff != "" {
				t.Errorf("%s line %d: $ %s\n%s", page, s.line, s.command, diff)
			}
		}
	}
	if update {
		if err := os.WriteFile(path, []byte(renderConsoleBlocks(string(src), blocks)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the real output of %d blocks into %s", len(blocks), path)
	}
}

// consoleBlock is one ```console block: its lines in its page and its steps.
type consoleBlock struct {
	start, end int // line indexes of the fences
	steps      []consoleStep
}

// consoleStep is a "$ command" line and the output shown below it.
type consoleStep struct {
	line    int // 1-based line of the command
	command string
	output  []string
}

func consoleBlocks(src string) []consoleBlock {
	lines := strings.Split(src, "\n")
	var blocks []consoleBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```console" {
			continue
		}
		b := consoleBlock{start: i}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			if cmd, ok := strings.CutPrefix(lines[i], "$ "); ok {
				b.steps = append(b.steps, consoleStep{line: i + 1, command: cmd})
			} else if len(b.steps) > 0 {
				last := &b.steps[len(b.steps)-1]
				last.output = append(last.output, lines[i])
			}
		}
		b.end = i
		blocks = append(blocks, b)
	}
	return blocks
}

func renderConsoleBlocks(src string, blocks []consoleBlock) string {
	lines := strings.Split(src, "\n")
	var out []string
	prev := 0
	for _, b := range blocks {
		out = append(out, lines[prev:b.start+1]...)
		for _, s := range b.steps {
			out = append(out, "$ "+s.command)
			out = append(out, s.output...)
		}
		prev = b.end
	}
	out = append(out, lines[prev:]...)
	return strings.Join(out, "\n")
}

// keepShown is got's lines, cut where shown cut its output with "...".
func keepShown(got string, shown []string) []string {
	lines := outputLines(got)
	for i, l := range shown {
		if l == "..." && i < len(lines) {
			return append(lines[:i:i], "...")
		}
	}
	return lines
}

func outputLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

// compareOutput says how got differs from the page's shown lines, after
// normalizing both; "" when they match.
func compareOutput(shown []string, got string) string {
	gotLines := outputLines(got)
	for i, want := range shown {
		if want == "..." {
			return ""
		}
		if i >= len(gotLines) {
			return fmt.Sprintf("output ends before the page's line %q; got:\n%s", want, got)
		}
		if normalize(want) != normalize(gotLines[i]) {
			return fmt.Sprintf("page shows %q\n      got  %q\nwhole output:\n%s", want, gotLines[i], got)
		}
	}
	if len(gotLines) > len(shown) {
		return fmt.Sprintf("output has %d more lines than the page shows; got:\n%s", len(gotLines)-len(shown), got)
	}
	return ""
}

// What may differ between the pages' run and this one, most specific first.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`kubectl-vmctl \S+ \(commit \w+, built \S+\)`), "kubectl-vmctl VERSION (commit COMMIT, built DATE)"},
	{regexp.MustCompile(`(kubectl-vmctl:|app\.kubernetes\.io/version: )\S+`), "${1}VERSION"},
	// A VM revision's hash, which differs between runs; not a ReplicaSet's
	// pod-template-hash in a Pod's name (below).
	{regexp.MustCompile(`(^|[^-\w])[0-9a-f]{10}\b`), "${1}REVISION"},
	{regexp.MustCompile(`\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [\w.]+:\d+\]`), "LOG]"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "UID"},
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b`), "TIME"},
	{regexp.MustCompile(`\bnode-\d+\b`), "NODE"},
	// KubeVirt's launcher Pods have generated names, and Pods their IPs.
	{regexp.MustCompile(`\b(virt-launcher-\S+)-[a-z0-9]{5}\b`), "${1}-XXXXX"},
	// A Deployment's Pods: the ReplicaSet's pod-template-hash, then a suffix.
	{regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2-9]{4,10}-[bcdfghjklmnpqrstvwxz2-9]{5}\b`), "-HASH-XXXXX"},
	{regexp.MustCompile(`\b10\.\d+\.\d+\.\d+\b`), "POD-IP"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)(\d+(s|m|h))?\b`), "AGE"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

func normalize(line string) string {
	for _, n := range normalizers {
		line = n.re.ReplaceAllString(line, n.with)
	}
	return strings.TrimSpace(line)
}

// runREADMECommand runs command with bash in the repository's root, as the
// cluster admin in the default namespace, with kubectl-vmctl on PATH so that
// kubectl finds it as the vmctl plugin. It returns stdout and stderr as one
// stream, as a terminal shows them.
func runREADMECommand(t *testing.T, command string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Dir = repoFile(".")
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+e.cluster.Kubeconfig,
		"PATH="+filepath.Dir(e.binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("$ %s: timed out\n%s", command, out.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("$ %s: %v", command, err)
	}
	return out.String()
}

// cleanupREADME removes what the pages' commands make in the default
// namespace: Pods first, so their agents delete their VMs, then the rest.
func cleanupREADME(t *testing.T) {
	t.Helper()
	scaffolded := contract.LabelManagedBy + "=" + contract.ManagedBy
	for _, args := range [][]string{
		{"delete", "statefulset,deployment,daemonset", "-l", scaffolded, "--ignore-not-found", "--wait=true"},
		{"delete", "pods", "-l", scaffolded, "--ignore-not-found", "--wait=true"},
		{"delete", "vm", "--all", "--ignore-not-found", "--wait=true"},
		{"delete", "serviceaccount,role,rolebinding,service,poddisruptionbudget", "-l", scaffolded, "--ignore-not-found"},
	} {
		kubectl(t, nil, append(args, "-n", "default")...)
	}
	deleteScaffolded("default")
}
