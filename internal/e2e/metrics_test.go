//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// sample is one line of the Prometheus text format: a metric's labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

// apiMetrics is what kube-apiserver's /metrics said, by metric name.
type apiMetrics map[string][]sample

// scrapeAPIServer reads kube-apiserver's own /metrics as the cluster admin.
func scrapeAPIServer(ctx context.Context) (apiMetrics, error) {
	rc, err := rest.RESTClientFor(rawConfig())
	if err != nil {
		return nil, err
	}
	body, err := rc.Get().AbsPath("/metrics").Timeout(5 * time.Second).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver /metrics: %w", err)
	}
	return parseMetrics(body)
}

// parseMetrics reads the Prometheus text format's samples; comments and
// histograms' extra lines parse like any other sample.
func parseMetrics(body []byte) (apiMetrics, error) {
	m := apiMetrics{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("metrics line %q: unbalanced braces", line)
			}
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("metrics line %q: label %q", line, kv)
				}
				uq, err := strconv.Unquote(v)
				if err != nil {
					return nil, fmt.Errorf("metrics line %q: label %q: %w", line, kv, err)
				}
				labels[k] = uq
			}
		} else if f := strings.Fields(line); len(f) >= 2 {
			name, rest = f[0], f[1]
		}
		value, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: value: %w", line, err)
		}
		m[name] = append(m[name], sample{labels: labels, value: value})
	}
	return m, sc.Err()
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, escaped, start := false, false, 0
	for i, c := range s {
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// sum adds the values of metric name's samples whose labels match want (a
// label missing from want matches anything; a want value "a|b" matches
// either).
func (m apiMetrics) sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, s := range m[name] {
		if matches(s.labels, want) {
			total += s.value
		}
	}
	return total
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		ok := false
		for _, alt := range strings.Split(v, "|") {
			if labels[k] == alt {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// agentVMWatches selects, in apiserver_longrunning_requests, the watches open
// now on one VirtualMachine each (scope "resource": narrowed to a name): the
// agents' own. KubeVirt's controllers and the garbage collector watch VMs
// across the cluster, and no command runs beside the tests that count these.
var agentVMWatches = map[string]string{
	"group": "kubevirt.io", "resource": "virtualmachines", "scope": "resource", "verb": "WATCH",
}

// rawConfig is the admin's REST config, set up for a raw RESTClient.
func rawConfig() *rest.Config {
	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}
