//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// etcdCompact compacts etcd's history up to its current revision, through
// its JSON gateway, as the API server's own periodic compaction does (with
// --etcd-compaction-interval) but at once, and returns the revision.
func etcdCompact(ctx context.Context) (int64, error) {
	// Any read returns the current revision in its header.
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdPost(ctx, "/v3/kv/range", map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("/registry/")), "limit": 1}, &rng); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd's current revision %q: %w", rng.Header.Revision, err)
	}
	if err := etcdPost(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return rev, err
	}
	return rev, nil
}

// etcdPost posts req as JSON to etcd's gateway at path and decodes the
// answer into resp (when not nil).
func etcdPost(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cluster.EtcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer func() { _ = res.Body.Close() }()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s %s", path, res.Status, out)
	}
	if resp != nil {
		if err := json.Unmarshal(out, resp); err != nil {
			return fmt.Errorf("etcd %s: %w: %s", path, err, out)
		}
	}
	return nil
}
