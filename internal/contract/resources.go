package contract

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FormatResources writes list as "cpu=10m,memory=32Mi", by name: how the
// agent's flags FlagOwnRequests and FlagOwnLimits and the Pod annotation
// AnnotationReservation carry resources, and how messages show them.
func FormatResources(list corev1.ResourceList) string {
	out := make([]string, 0, len(list))
	for name, q := range list {
		out = append(out, string(name)+"="+q.String())
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// ParseResources reads what FormatResources writes into a ResourceList;
// nil for "".
func ParseResources(s string) (corev1.ResourceList, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not NAME=QUANTITY, as in cpu=10m,memory=32Mi", item)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}
