package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeclients "github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

func claimsOf(claims ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--replica-claims="+claims[0])
		for _, c := range claims[1:] {
			p.Spec.Containers[0].Args[len(p.Spec.Containers[0].Args)-1] += "," + c
		}
	}
}

func pvc(ns, name string, phase corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

// TestPairClaims: a row shows its Pod's own claims, and names a claim
// that will not bind or whose volume is gone; an unscheduled Pod's claims
// wait for the scheduler (WaitForFirstConsumer).
func TestPairClaims(t *testing.T) {
	proto := protoVM("ns", "db", 5)
	inv := Inventory{
		Pods: ptrs(
			agentPod("ns", "db-0", "uid-0", "n1", "db", time.Hour, claimsOf("data", "logs")),
			agentPod("ns", "db-1", "uid-1", "n1", "db", time.Hour, claimsOf("data")),
			agentPod("ns", "db-2", "uid-2", "n1", "db", time.Hour, claimsOf("data")),
			agentPod("ns", "db-3", "uid-3", "", "db", time.Hour, claimsOf("data"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		),
		Prototypes: ptrs(proto),
		VMs:        ptrs(derivedVM("ns", "db", 5, "ns", "db-0", "uid-0", "n1", time.Hour)),
		VMIs:       ptrs(vmi("ns", "db-db-0", "n1")),
		Claims: ptrs(pvc("ns", "data-db-0", corev1.ClaimBound), pvc("ns", "logs-db-0", corev1.ClaimBound),
			pvc("ns", "data-db-1", corev1.ClaimLost), pvc("ns", "data-db-3", corev1.ClaimPending)),
	}
	type got struct {
		Pod      string
		Claims   []Claim
		Problems []string
	}
	var rows []got
	for _, r := range Pair(&inv, time.Now(), NotReadyGrace) {
		rows = append(rows, got{r.Pod, r.Claims, r.Problems})
	}
	want := []got{
		{Pod: "db-0", Claims: []Claim{{"data-db-0", "Bound"}, {"logs-db-0", "Bound"}}},
		{Pod: "db-1", Claims: []Claim{{"data-db-1", "Lost"}}, Problems: []string{ProblemVMMissing, "claim data-db-1 Lost: its volume is gone"}},
		{Pod: "db-2", Claims: []Claim{{"data-db-2", ClaimMissing}}, Problems: []string{ProblemVMMissing, "claim data-db-2 missing"}},
		{Pod: "db-3", Claims: []Claim{{"data-db-3", "Pending"}}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	// A Pending claim of a Pod on a node will not bind by itself.
	inv.Pods[3].Spec.NodeName, inv.Pods[3].Status.Phase = "n1", corev1.PodRunning
	if r := Pair(&inv, time.Now(), NotReadyGrace)[3]; !cmp.Equal(r.Problems, []string{ProblemVMMissing, "claim data-db-3 Pending on a scheduled Pod: no volume binds it"}) {
		t.Errorf("problems of a scheduled Pod with a Pending claim: %q", r.Problems)
	}
}

// TestLoadReadsClaimsOnlyForAgentsThatUseThem: one LIST of the
// namespace's claims where an agent uses its Pod's own, none otherwise.
func TestLoadReadsClaimsOnlyForAgentsThatUseThem(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       corev1.Pod
		wantLists int
	}{
		{"a StatefulSet's agent with claims", agentPod("ns", "db-0", "uid-0", "n1", "db", time.Hour, claimsOf("data")), 1},
		{"an agent without", agentPod("ns", "web-a", "uid-a", "n1", "web", time.Hour), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := pvc("ns", "data-db-0", corev1.ClaimBound)
			kube, virt := fakes([]runtime.Object{&tc.pod, &data}, nil)
			inv, err := Load(t.Context(), kubeclients.Clients{Kube: kube, KubeVirt: virt}, Query{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			lists := 0
			for _, a := range kube.Actions() {
				if a.GetResource().Resource == "persistentvolumeclaims" {
					lists++
				}
			}
			if lists != tc.wantLists || len(inv.Claims) != tc.wantLists {
				t.Errorf("%d requests for claims, %d claims read; want %d of each", lists, len(inv.Claims), tc.wantLists)
			}
		})
	}
}
