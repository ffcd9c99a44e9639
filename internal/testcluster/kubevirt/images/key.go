package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// cacheKey names a build by what shapes it besides hack/image's go.mod and
// go.sum (which CachedBuild hashes): the version, the commands' and the
// KubeVirt source files' contents, and the source of this package (the
// package list, the steps, the shim) and of hack/image.
func cacheKey(version, kubevirtSrc, binDir, pkgDir, imageDir string) (string, error) {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "version %s\n", version)
	var files []string
	for _, c := range kubevirt.NodeCommands {
		f := filepath.Join(binDir, c)
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("KubeVirt's %s is not built in %s (%w); build KubeVirt's commands first", c, binDir, err)
		}
		files = append(files, f)
	}
	for _, f := range kubevirtFiles {
		files = append(files, filepath.Join(kubevirtSrc, f.src))
	}
	files = append(files, filepath.Join(kubevirtSrc, containerDiskSrc))
	own, err := sourceFiles(pkgDir, imageDir)
	if err != nil {
		return "", err
	}
	for _, f := range append(files, own...) {
		if err := hashFile(h, f); err != nil {
			return "", fmt.Errorf("hash the inputs of KubeVirt's node images: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourceFiles are the non-test Go files of dirs and the files this package
// embeds, sorted.
func sourceFiles(dirs ...string) ([]string, error) {
	var files []string
	for _, pattern := range []string{"*.go", "files/*"} {
		for _, d := range dirs {
			m, err := filepath.Glob(filepath.Join(d, pattern))
			if err != nil {
				return nil, err
			}
			for _, f := range m {
				if !strings.HasSuffix(f, "_test.go") {
					files = append(files, f)
				}
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no source in %s", strings.Join(dirs, ", "))
	}
	sort.Strings(files)
	return files, nil
}

// hashFile adds f's base name, size and content to h.
func hashFile(h io.Writer, f string) error {
	r, err := os.Open(f)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	fi, err := r.Stat()
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(h, "file %s %d\n", filepath.Base(f), fi.Size())
	_, err = io.Copy(h, r)
	return err
}
