package testcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditPolicy records, at the Metadata level, every request on KubeVirt's
// VirtualMachines, and every request of every other identity but the
// admin's (the tests' own and kubectl's): the agents, KubeVirt's components,
// kube-controller-manager, kube-scheduler, kwok and the doubles, each its own
// user (componentUsers). It records who asked (with a bound token's Pod),
// the verb, the object and the answer's code. Tests count requests by it,
// per agent and per component; the API server's metrics have no label
// that says who asked. Leases are left out: the nodes' and controllers'
// heartbeats, a steady few a second that no workload changes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources:
  - group: kubevirt.io
    resources: [virtualmachines]
- level: None
  resources:
  - group: coordination.k8s.io
    resources: [leases]
- level: None
  users: ["` + AdminUser + `"]
- level: Metadata
`

// AuditLog is the path of kube-apiserver's audit log (JSON lines).
func (c *Cluster) AuditLog() string { return filepath.Join(c.Dir, "audit.log") }

// writeAuditPolicy writes the audit policy and returns its path.
func (c *Cluster) writeAuditPolicy() (string, error) {
	path := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(path, []byte(auditPolicy), 0o644); err != nil {
		return "", fmt.Errorf("write the audit policy: %w", err)
	}
	return path, nil
}

// AuditEvent is the part of an audit.k8s.io/v1 Event that tests read.
type AuditEvent struct {
	AuditID    string           `json:"auditID"`
	Stage      string           `json:"stage"`
	Received   metav1.MicroTime `json:"requestReceivedTimestamp"`
	Verb       string           `json:"verb"`
	RequestURI string           `json:"requestURI"`
	UserAgent  string           `json:"userAgent"`
	User       struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
}

// Pod is the name of the Pod whose bound ServiceAccount token made the
// request, or "".
func (e AuditEvent) Pod() string {
	if p := e.User.Extra["authentication.kubernetes.io/pod-name"]; len(p) > 0 {
		return p[0]
	}
	return ""
}

// ReadAudit returns the requests the audit log recorded, one event per
// request: its ResponseStarted stage for watches (the only one they have
// until they end) and ResponseComplete for the rest.
func (c *Cluster) ReadAudit() ([]AuditEvent, error) {
	f, err := os.Open(c.AuditLog())
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var events []AuditEvent
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("read the audit log: %w", err)
		}
		if seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		events = append(events, e)
	}
	return events, sc.Err()
}
