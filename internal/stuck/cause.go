package stuck

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxCause is the most runes of KubeVirt's cause a problem keeps: enough for
// the scheduler's reason or an API server's refusal, short enough for a
// table column.
const maxCause = 120

// shorten makes s one line of at most maxCause runes.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimSuffix(s, ".")
	if utf8.RuneCountInString(s) <= maxCause {
		return s
	}
	return string([]rune(s)[:maxCause-1]) + "…"
}

// schedulerCause keeps, of kube-scheduler's "0/4 nodes are available: 1
// Insufficient memory, 3 node(s) didn't satisfy plugin(s) [NodeAffinity].
// no new claims to deallocate, preemption: ..." what is about the VM's own
// node. A derived VM may run on
// one node only, so the other nodes' "didn't match" and the preemption
// summary say nothing a user can act on.
func schedulerCause(msg string) string {
	_, reasons, ok := strings.Cut(msg, " nodes are available: ")
	if !ok {
		return msg
	}
	// The reasons end with the first sentence; what follows is about
	// claims and preemption.
	reasons, _, _ = strings.Cut(reasons, ". ")
	reasons = strings.TrimSuffix(strings.TrimSpace(reasons), ".")
	var kept []string
	for _, r := range strings.Split(reasons, ", ") {
		r = nodeCount.ReplaceAllString(strings.TrimSpace(r), "")
		if r == "" || otherNodes.MatchString(r) {
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return msg
	}
	return strings.Join(kept, ", ")
}

var (
	// nodeCount is the number of nodes a scheduler reason starts with.
	nodeCount = regexp.MustCompile(`^\d+ `)
	// otherNodes are the scheduler's reasons for nodes that the VM's node
	// affinity rules out.
	otherNodes = regexp.MustCompile(`didn't match Pod's node affinity/selector|didn't satisfy plugin\(s\) \[NodeAffinity\]`)
)

// dataVolumeCreateCause reports whether virt-controller's sync error msg is
// a refused DataVolume create, and the refusal: "Error encountered while
// creating DataVolumes: failed to create DataVolume: <the API server's
// error>".
func dataVolumeCreateCause(msg string) (string, bool) {
	const prefix = "failed to create DataVolume: "
	_, cause, ok := strings.Cut(msg, prefix)
	return cause, ok
}
