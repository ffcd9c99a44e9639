package testcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
)

// RestartEtcdCompacted stops etcd and, before the API server can reach it
// again, writes a key of its own and compacts etcd's whole history: it starts etcd on
// another loopback port for that, then on its own port again. It plays an
// etcd restored or failed over while its history was compacted. The API
// server's watches on etcd resume from a compacted revision and fail, every
// watch cache lists again and starts at the current revision, and every
// client's watch from an older version gets 410 Gone. It returns the
// revision compacted to, once etcd serves on its own port again (the API
// server reconnects by itself).
func (c *Cluster) RestartEtcdCompacted(ctx context.Context) (int64, error) {
	old := c.process(Etcd)
	if old == nil || old.Exited() {
		return 0, errors.New("etcd is not running")
	}
	old.StopWith(syscall.SIGTERM)
	c.forget(old)

	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	aside := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := c.startEtcdAt(ctx, old, aside)
	if err != nil {
		return 0, err
	}
	rev, err := compactAll(ctx, aside)
	p.StopWith(syscall.SIGTERM)
	c.forget(p)
	if err != nil {
		return 0, err
	}
	if _, err := c.startEtcdAt(ctx, old, c.EtcdURL); err != nil {
		return 0, err
	}
	c.logf("etcd restarted with its history compacted to revision %d", rev)
	return rev, nil
}

// CompactEtcd compacts etcd's history up to its current revision, at once,
// as the API server's own periodic compaction (--etcd-compaction-interval)
// does later. Compacting again with nothing written since is no error. The running watches go on; a watch opened from an older
// resourceVersion than the watch cache holds gets 410 Gone. It returns the
// revision compacted to.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	return compactNow(ctx, c.EtcdURL)
}

// EtcdDelete deletes key from etcd, behind the API server's back.
func (c *Cluster) EtcdDelete(ctx context.Context, key string) error {
	var res struct {
		Deleted string `json:"deleted"`
	}
	if err := etcdCall(ctx, c.EtcdURL, "/v3/kv/deleterange", map[string]any{"key": b64(key)}, &res); err != nil {
		return err
	}
	if res.Deleted != "1" {
		return fmt.Errorf("etcd deleterange %s deleted %q keys, want 1", key, res.Deleted)
	}
	return nil
}

// startEtcdAt starts etcd again with old's flags, serving clients at url,
// and waits until it is healthy.
func (c *Cluster) startEtcdAt(ctx context.Context, old *Process, url string) (*Process, error) {
	args := make([]string, len(old.args))
	for i, a := range old.args {
		switch {
		case strings.HasPrefix(a, "--listen-client-urls="):
			a = "--listen-client-urls=" + url
		case strings.HasPrefix(a, "--advertise-client-urls="):
			a = "--advertise-client-urls=" + url
		}
		args[i] = a
	}
	p, err := c.start(Etcd, old.binary, args, old.env)
	if err != nil {
		return nil, err
	}
	return p, WaitFor(ctx, "etcd", []*Process{p}, func(ctx context.Context) (bool, error) {
		return etcdHealthy(ctx, url)
	})
}

// compactAll writes a key of its own twice and compacts etcd up to the
// current revision. A watch resumes from the revision after the last one it
// saw, and compaction keeps the revision it compacts to: twice puts even a
// watch that saw the last revision before these writes behind.
func compactAll(ctx context.Context, url string) (int64, error) {
	for range 2 {
		if err := etcdCall(ctx, url, "/v3/kv/put", map[string]any{"key": b64("/testcluster/compacted"), "value": b64("x")}, nil); err != nil {
			return 0, err
		}
	}
	return compactNow(ctx, url)
}

// compactNow compacts etcd at url up to its current revision, and returns it.
func compactNow(ctx context.Context, url string) (int64, error) {
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any read returns the current revision in its header.
	if err := etcdCall(ctx, url, "/v3/kv/range", map[string]any{"key": b64("/registry/"), "limit": 1}, &rng); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd's current revision %q: %w", rng.Header.Revision, err)
	}
	err = etcdCall(ctx, url, "/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil)
	if err != nil && strings.Contains(err.Error(), errCompacted) {
		// Nothing was written since the last compaction, which went up to
		// rev: the history is compacted already.
		return rev, nil
	}
	return rev, err
}

// errCompacted is etcd's answer to a compaction at a revision compacted
// already (mvcc.ErrCompacted).
const errCompacted = "mvcc: required revision has been compacted"

// b64 is how etcd's JSON gateway takes keys and values.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// etcdCall posts req to etcd's JSON gateway at path and decodes the answer
// into resp (when not nil).
func etcdCall(ctx context.Context, url, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(body))
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
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(out, resp); err != nil {
		return fmt.Errorf("etcd %s: %w in %s", path, err, out)
	}
	return nil
}
