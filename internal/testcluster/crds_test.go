package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCRDDir(t *testing.T) {
	withReal := t.TempDir()
	root := filepath.Join(withReal, "main")
	realDir := filepath.Join(withReal, "shared", "kubevirt-crds")
	if err := os.MkdirAll(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range kubevirtCRDFiles() {
		if err := os.WriteFile(filepath.Join(realDir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	halfReal := t.TempDir()
	if err := os.MkdirAll(filepath.Join(halfReal, "shared", "kubevirt-crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(halfReal, "shared", "kubevirt-crds", kubevirtCRDFiles()[0]), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name          string
		root          string
		forceFallback bool
		wantDir       string
		wantReal      bool
	}{
		{"real CRDs present", root, false, realDir, true},
		{"real CRDs present but fallback forced", root, true, filepath.Join(root, FallbackCRDDir), false},
		{"no shared checkout", filepath.Join(t.TempDir(), "main"), false, "", false},
		{"only one real CRD", filepath.Join(halfReal, "main"), false, filepath.Join(halfReal, "main", FallbackCRDDir), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, isReal := crdDir(tt.root, tt.forceFallback)
			want := tt.wantDir
			if want == "" {
				want = filepath.Join(tt.root, FallbackCRDDir)
			}
			if dir != want || isReal != tt.wantReal {
				t.Errorf("crdDir = %q, %v; want %q, %v", dir, isReal, want, tt.wantReal)
			}
		})
	}
}

// The fallback CRDs must match KubeVirt's in everything but the schema.
func TestFallbackCRDsMatchKubeVirtNames(t *testing.T) {
	type shape struct {
		Name, Kind string
		ShortNames []string
		Versions   []string // name:served:storage:status
		Columns    [][]string
	}
	summarize := func(obj *unstructured.Unstructured) shape {
		s := shape{Name: obj.GetName()}
		s.Kind, _, _ = unstructured.NestedString(obj.Object, "spec", "names", "kind")
		s.ShortNames, _, _ = unstructured.NestedStringSlice(obj.Object, "spec", "names", "shortNames")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		for _, v := range versions {
			m := v.(map[string]any)
			sub, _ := m["subresources"].(map[string]any)
			_, status := sub["status"]
			s.Versions = append(s.Versions, fmt.Sprintf("%v:%v:%v:%v", m["name"], m["served"], m["storage"], status))
			var cols []string
			for _, c := range m["additionalPrinterColumns"].([]any) {
				c := c.(map[string]any)
				if c["priority"] == nil {
					cols = append(cols, c["name"].(string)+"="+c["jsonPath"].(string))
				}
			}
			s.Columns = append(s.Columns, cols)
		}
		return s
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	realDir := filepath.Join(root, RealCRDDir)
	for _, f := range kubevirtCRDFiles() {
		t.Run(f, func(t *testing.T) {
			realFile := filepath.Join(realDir, f)
			if _, err := os.Stat(realFile); err != nil {
				t.Skipf("KubeVirt's CRDs are not checked out: %v", err)
			}
			fallback, err := readObjects(filepath.Join(root, FallbackCRDDir, f))
			if err != nil || len(fallback) != 1 {
				t.Fatalf("read the fallback CRD: %v (%d objects)", err, len(fallback))
			}
			realObjs, err := readObjects(realFile)
			if err != nil || len(realObjs) != 1 {
				t.Fatalf("read KubeVirt's CRD: %v (%d objects)", err, len(realObjs))
			}
			if diff := cmp.Diff(summarize(realObjs[0]), summarize(fallback[0])); diff != "" {
				t.Errorf("fallback CRD differs from KubeVirt's (-kubevirt +fallback):\n%s", diff)
			}
		})
	}
}
