package revision

import (
	"errors"
	"fmt"
)

// RewrittenError says that a store holds, under a revision's hash, a
// revision whose content hashes to another: someone who may write the
// store pruned the revision and added it again with other content (the
// store's rule keeps a retained revision from changing, not from being
// replaced so). Its VMs would be made of content no rollout pinned.
type RewrittenError struct {
	// Store is the store's namespace/name.
	Store string
	// Hash is what the revision is held under, Actual what its content
	// hashes to.
	Hash, Actual string
	// Prototype is the name of the prototype the revision says it is of.
	Prototype string
}

// Error says what is wrong and what puts it right.
func (e *RewrittenError) Error() string {
	return fmt.Sprintf("VM revision %s in VMRevisionStore %s was rewritten after it was rolled out: its content hashes to %s; "+
		"`kubectl vmctl rollout restart %s` pins the prototype's revision again, and writes it anew", e.Hash, e.Store, e.Actual, e.Prototype)
}

// Verify returns a *RewrittenError when r, which s holds under hash, is
// not what hash names: every reader of a revision checks it before it
// trusts it (the agent, status, diff and rollout restart), as CEL cannot
// hash and the API server cannot.
func (s *Store) Verify(hash string) error {
	r := s.Revisions[hash]
	if r == nil {
		return nil
	}
	actual, err := Hash(r)
	if err != nil {
		return err
	}
	if actual != hash {
		return &RewrittenError{Store: s.Namespace + "/" + s.Name, Hash: hash, Actual: actual, Prototype: r.Name}
	}
	return nil
}

// Rewritten are the hashes of the revisions s holds that Verify refuses,
// each with what its content hashes to.
func (s *Store) Rewritten() map[string]string {
	out := map[string]string{}
	for h := range s.Revisions {
		var rerr *RewrittenError
		if errors.As(s.Verify(h), &rerr) {
			out[h] = rerr.Actual
		}
	}
	return out
}
