package doubles

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// maxProbePeriod caps the readiness probe's period unless the probe is to
// run as specified: a kubelet probes every periodSeconds (default 10), and
// tests should not wait that long.
const maxProbePeriod = time.Second

// readinessProbe is how the double probes an agent's readiness.
type readinessProbe struct {
	URL              string
	Period           time.Duration
	Timeout          time.Duration
	InitialDelay     time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// readinessProbeFor builds the probe for container c whose process serves
// probes on addr. An httpGet readiness probe in the spec gives the path,
// timeout, initial delay and thresholds (the port is the process's own);
// without one the double still probes /readyz, which every agent serves.
// The period is the spec's when asSpecified, else at most maxProbePeriod.
func readinessProbeFor(c *corev1.Container, addr string, asSpecified bool) readinessProbe {
	p := readinessProbe{
		URL:              "http://" + addr + "/readyz",
		Period:           maxProbePeriod,
		Timeout:          time.Second,
		SuccessThreshold: 1,
		FailureThreshold: 1,
	}
	spec := c.ReadinessProbe
	if spec == nil || spec.HTTPGet == nil {
		return p
	}
	if spec.HTTPGet.Path != "" {
		p.URL = "http://" + addr + spec.HTTPGet.Path
	}
	switch {
	case spec.PeriodSeconds > 0 && asSpecified:
		p.Period = time.Duration(spec.PeriodSeconds) * time.Second
	case spec.PeriodSeconds > 0:
		p.Period = min(time.Duration(spec.PeriodSeconds)*time.Second, maxProbePeriod)
	}
	if spec.TimeoutSeconds > 0 {
		p.Timeout = time.Duration(spec.TimeoutSeconds) * time.Second
	}
	p.InitialDelay = time.Duration(spec.InitialDelaySeconds) * time.Second
	if spec.SuccessThreshold > 0 {
		p.SuccessThreshold = int(spec.SuccessThreshold)
	}
	if spec.FailureThreshold > 0 {
		p.FailureThreshold = int(spec.FailureThreshold)
	}
	return p
}

// run probes until ctx is done and calls set with each new verdict. The
// container starts unready; thresholds count consecutive results, as in the
// kubelet.
func (p readinessProbe) run(ctx context.Context, set func(ready bool)) {
	client := &http.Client{
		Timeout: p.Timeout,
		// A fresh connection per probe, as the kubelet does: a restarted
		// process must not be judged over its predecessor's socket.
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	timer := time.NewTimer(p.InitialDelay)
	defer timer.Stop()
	ready, successes, failures := false, 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if p.probe(ctx, client) {
			successes, failures = successes+1, 0
			if !ready && successes >= p.SuccessThreshold {
				ready = true
				set(true)
			}
		} else {
			successes, failures = 0, failures+1
			if ready && failures >= p.FailureThreshold {
				ready = false
				set(false)
			}
		}
		timer.Reset(p.Period)
	}
}

// probe reports whether one GET answers with a 2xx or 3xx status.
func (p readinessProbe) probe(ctx context.Context, client *http.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "kube-probe/vmctl-kubelet-double")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}
