package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the module paths vmctl-agent must not link: kubectl-vmctl's
// printing and kubectl's helpers, whose package initialisation each agent
// would pay for at its start (docs/benchmarks.md, "Agent start").
var forbidden = []string{"k8s.io/kubectl", "k8s.io/cli-runtime", "charm.land/lipgloss"}

// TestLinksNoKubectlCLIRuntimeOrLipgloss lists what vmctl-agent links, as
// the go command builds it, and names each forbidden package with a package
// that imports it.
func TestLinksNoKubectlCLIRuntimeOrLipgloss(t *testing.T) {
	// go test puts its own go first on PATH.
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 50 {
		t.Fatalf("go list -deps listed %d packages, too few for vmctl-agent:\n%s", len(lines), out)
	}
	for _, line := range lines {
		importer, imports, _ := strings.Cut(line, " ")
		if isForbidden(importer) {
			continue // named where it is imported
		}
		for _, imp := range strings.Fields(imports) {
			if isForbidden(imp) {
				t.Errorf("vmctl-agent links %s, imported by %s: keep the agent's packages free of kubectl, cli-runtime and lipgloss", imp, importer)
			}
		}
	}
}

func isForbidden(pkg string) bool {
	for _, prefix := range forbidden {
		if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
			return true
		}
	}
	return false
}
