package contract

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourcesRoundTrip: what FormatResources writes, by name,
// ParseResources reads back; what is not NAME=QUANTITY is an error that
// says so.
func TestResourcesRoundTrip(t *testing.T) {
	list := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi"), corev1.ResourceCPU: resource.MustParse("10m")}
	s := FormatResources(list)
	if s != "cpu=10m,memory=32Mi" {
		t.Errorf("FormatResources = %q, want cpu=10m,memory=32Mi", s)
	}
	got, err := ParseResources(s)
	if err != nil {
		t.Fatal(err)
	}
	q := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(list, got, q); diff != "" {
		t.Errorf("ParseResources(%q) (-want +got):\n%s", s, diff)
	}
	if got, err := ParseResources(" "); got != nil || err != nil {
		t.Errorf("ParseResources(blank) = %v, %v; want nil, nil", got, err)
	}
	for in, want := range map[string]string{"cpu": `"cpu" is not NAME=QUANTITY`, "cpu=ten": "cpu: "} {
		if _, err := ParseResources(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseResources(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
