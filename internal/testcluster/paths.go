package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// toolsModuleRel is the tools module's directory relative to the repository root.
const toolsModuleRel = "internal/testcluster/tools"

// RepoRoot returns the kubectl-vmctl checkout this package was built from, or,
// when the source path is unknown (-trimpath), the nearest parent of the working
// directory that holds the tools module.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if isRepoRoot(root) {
			return filepath.Clean(root), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isRepoRoot(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", errors.New("find the repository root: no " + toolsModuleRel + "/go.mod above the working directory; run from the kubectl-vmctl checkout")
}

func isRepoRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, toolsModuleRel, "go.mod"))
	return err == nil
}
