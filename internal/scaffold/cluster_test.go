package scaffold

import (
	"regexp"
	"slices"
	"testing"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// cluster is the API server's admission as a fleet scaffolds it: its
// policies and bindings in k8s.io/apiserver's own plugin (deny), and the
// same with every binding's validationActions set to [Warn] (warn). The
// plugin's refusal names only the first validation that fails; under
// warn each one that fails, in every binding that matches, is a warning,
// so warn names them all.
type cluster struct{ deny, warn *apiServer }

// newCluster starts f's cluster, which stops when owner ends.
func newCluster(t, owner testing.TB, f *fleet) *cluster {
	t.Helper()
	policies := f.policies(t)
	warn := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	}
	c := &cluster{deny: unstartedAPIServer(t, owner, policies, nil), warn: unstartedAPIServer(t, owner, policies, warn)}
	// Each start waits for its informers a tenth of a second at least.
	var g errgroup.Group
	g.Go(c.deny.plugin.Start)
	g.Go(c.warn.plugin.Start)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return c
}

// clusters are the clusters of the fleets of a test's cases, one per set
// of policies, which live as long as the test.
type clusters struct {
	owner testing.TB
	byKey map[string]*cluster
}

func newClusters(owner testing.TB) *clusters {
	return &clusters{owner: owner, byKey: map[string]*cluster{}}
}

// of is the cluster of f's policies.
func (c *clusters) of(t testing.TB, f *fleet) *cluster {
	t.Helper()
	key := f.policiesKey(t)
	if c.byKey[key] == nil {
		c.byKey[key] = newCluster(t, c.owner, f)
	}
	return c.byKey[key]
}

// failure is a validation that fails: its policy's, as the binding binds
// it, and its message.
type failure struct{ policy, binding, message string }

// verdict is the API server's answer to a request.
type verdict struct {
	// refused is the refusal as the agent reads it, or nil.
	refused error
	// failed are, for a refused request, the validations that fail in
	// every binding that matches it.
	failed []failure
	// unexplained is, for a refused request, what refuses it with every
	// binding set to warn: what no validation explains, such as a
	// parameter not found.
	unexplained error
}

// warnedBy is the dispatcher's warning of a validation that fails under a
// binding that warns.
var warnedBy = regexp.MustCompile(`(?s)^Validation failed for ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)': (.*)$`)

// judge is c's answer to r, made with the token r names of f's, with f's
// revision store held, and r's namespace.
func (c *cluster) judge(t testing.TB, f *fleet, r request) verdict {
	t.Helper()
	held := []runtime.Object{namespace(r.target().GetNamespace()), f.param(t)}
	c.deny.hold(t, held...)
	v := verdict{refused: c.deny.admit(f, r, nil)}
	if v.refused == nil {
		// What fails under warn fails under deny, whose bindings deny
		// it unless their actions are wrong, which the cases' refusals
		// and TestAdmissionWiring catch.
		return v
	}
	c.warn.hold(t, held...)
	var warned warnings
	v.unexplained = c.warn.admit(f, r, &warned)
	for _, w := range warned {
		m := warnedBy.FindStringSubmatch(w)
		if m == nil {
			t.Fatalf("a warning of no policy: %s", w)
		}
		v.failed = append(v.failed, failure{policy: m[1], binding: m[2], message: m[3]})
	}
	return v
}

// refusals lists, sorted, the rules that refuse r: those of every
// validation that fails in every binding the API server matches r with.
// A refusal that no rule explains, or a rule's that its policy's own
// binding does not bind, is an error, and so is a refusal the agent
// reads that is not the 403 of one of those rules.
func (f *fleet) refusals(t *testing.T, c *cluster, r request) []string {
	t.Helper()
	v := c.judge(t, f, r)
	if v.refused == nil {
		return nil
	}
	if v.unexplained != nil {
		t.Errorf("refused by no rule: %v", v.unexplained)
	}
	var refused []string
	for _, fail := range v.failed {
		rule := ruleOf(fail.message)
		if rule == "" || fail.binding != fail.policy {
			t.Errorf("refused by no rule: %s, with binding %s: %s", fail.policy, fail.binding, fail.message)
			continue
		}
		refused = append(refused, rule)
	}
	if !apierrors.IsForbidden(v.refused) || !slices.Contains(refused, ruleOf(v.refused.Error())) {
		t.Errorf("refused with %v: not the 403 of one of the rules that fail, %q", v.refused, refused)
	}
	slices.Sort(refused)
	return refused
}
