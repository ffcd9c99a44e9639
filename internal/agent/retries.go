package agent

import (
	"net/http"
)

// PaceRetries wraps the agent's HTTP transport so that the agent's own
// jittered backoff, not the API server's Retry-After, paces the retries of
// a refused request. client-go retries a 429 (or a 5xx) that carries
// Retry-After up to ten times within the one call, after exactly the seconds
// the server named. A restarted API server, or one whose watch cache lists
// again, answers every watch with "429 storage is (re)initializing,
// Retry-After: 1" until its cache is in, and a fleet of agents then asks
// again once a second, in lockstep: 8,584 such requests from 1,000 agents
// after one restart in the fleet benchmark. Without the header the answer
// reaches the caller at once, still a 429 (apierrors.IsTooManyRequests), and
// every caller in the agent (the reflector of each watch, each step) retries
// it with exponential backoff and jitter.
//
// It fits rest.Config.Wrap.
func PaceRetries(rt http.RoundTripper) http.RoundTripper { return ownRetries{rt} }

type ownRetries struct{ rt http.RoundTripper }

func (t ownRetries) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if resp != nil {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// close idle connections, for one).
func (t ownRetries) WrappedRoundTripper() http.RoundTripper { return t.rt }
