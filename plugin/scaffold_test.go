package plugin

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// The -update flag may be defined by another golden test of this package;
// define it only if nobody did, and read it by name.
var _ = defineUpdateFlag()

func defineUpdateFlag() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite testdata golden files from the current output")
	}
	return true
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// runScaffold runs `kubectl vmctl scaffold args...` as version v1.2.3, in
// a kubeconfig context whose namespace is from-kubeconfig, against a
// cluster with a prototype testvm the agents take in each namespace the
// golden tests use.
func runScaffold(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var protos []runtime.Object
	for _, ns := range []string{"from-kubeconfig", "default", "vms", "protos", "explicit"} {
		protos = append(protos, &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: ns},
			Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
		})
	}
	// The prototype in "protos" runs on dedicated, tainted nodes: its agents
	// must go there too.
	dedicated := protos[3].(*kubevirtv1.VirtualMachine).Spec.Template
	dedicated.Spec.NodeSelector = map[string]string{"pool": "vms"}
	dedicated.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vms", Effect: corev1.TaintEffectNoSchedule}}
	dedicated.Spec.PriorityClassName = "vm-high"
	return runScaffoldWith(t, protos, args...)
}

// serverVersion is the Kubernetes version runScaffold's cluster reports:
// the test cluster's, which resizes Pods in place.
const serverVersion = "v1.36.3"

// serves makes kube's discovery say the cluster is Kubernetes version and
// serves the revision stores (scaffold crd was applied).
func serves(kube *kubefake.Clientset, version string) {
	discovery := kube.Discovery().(*fakediscovery.FakeDiscovery)
	discovery.FakedServerVersion = &apiversion.Info{GitVersion: version}
	discovery.Resources = append(discovery.Resources, &metav1.APIResourceList{
		GroupVersion: revision.StoreGVR.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: revision.StoreResource, Kind: "VMRevisionStore", Namespaced: true}},
	})
}

// runScaffoldWith is runScaffold with objs as the cluster's VMs,
// StorageClasses and revision stores (unstructured).
func runScaffoldWith(t *testing.T, objs []runtime.Object, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	protos := []runtime.Object{deployedKubeVirt("v1.8.0")}
	kubeObjs := []runtime.Object{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "vm-high"}, Value: 1000}}
	var stores []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *storagev1.StorageClass:
			kubeObjs = append(kubeObjs, o)
		case *unstructured.Unstructured:
			stores = append(stores, o)
		default:
			protos = append(protos, o)
		}
	}
	virt := kubevirtfake.NewSimpleClientset(protos...)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewScaffoldOptions(streams)
	o.Version = "v1.2.3"
	o.Image = scaffold.DefaultImage(o.Version)
	// The priority class of the prototype in "protos".
	kube := kubefake.NewClientset(kubeObjs...)
	serves(kube, serverVersion)
	f := fakeapi.NewFactory(t, "from-kubeconfig", kube, virt)
	f.Dynamic = fakeapi.NewDynamic(stores...)
	err = opRun(t.Context(), f, newCmdScaffold(f, o), args...)
	return out.String(), errOut.String(), err
}

// Scaffolding pins the VMs to a revision of the prototype, which it reads:
// without a cluster, or without the prototype, it says so and prints
// nothing.
func TestScaffoldNeedsThePrototype(t *testing.T) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := NewCmdVmctl(streams)
	root.SetArgs([]string{"scaffold", "ds", "testvm", "-n", "vms", "--kubeconfig", filepath.Join(t.TempDir(), "none")})
	if code := Execute(root, streams); code != 1 || out.Len() != 0 {
		t.Errorf("without a cluster: exit %d, stdout:\n%s", code, out)
	}
	if want := "error: read the kubeconfig for the namespace: "; !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("stderr %q, want it to start %q", errOut, want)
	}
	for _, args := range [][]string{{"deployment", "testvm", "-n", "elsewhere"}, {"deployment", "testvm", "-n", "vms", "--strict"}} {
		out, stderr, err := runScaffoldWith(t, nil, args...)
		want := "prototype " + args[3] + "/testvm not found: scaffold pins the VMs to a revision of the prototype, so create it first"
		if err == nil || !strings.HasPrefix(err.Error(), want) || out != "" || stderr != "" {
			t.Errorf("%v: error %v, stdout %q, stderr %q; want only an error starting %q", args, err, out, stderr, want)
		}
	}
}

// A broken kubeconfig: scaffold, which -n frees from it, says so; status,
// which needs the cluster anyway, does not.
func TestBrokenKubeconfigAdvice(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("garbage: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		wantN  bool
		reason string
	}{
		{[]string{"scaffold", "ds", "testvm", "-n", "vms"}, false, "scaffold reads the prototype from the cluster"},
		{[]string{"status", "-n", "vms"}, false, "status needs the kubeconfig even with -n"},
	} {
		streams, _, _, errOut := genericiooptions.NewTestIOStreams()
		root := NewCmdVmctl(streams)
		root.SetArgs(append(tc.args, "--kubeconfig", bad))
		code := Execute(root, streams)
		msg := errOut.String()
		if code == 0 || !strings.Contains(msg, "check --kubeconfig and --context") || strings.Contains(msg, "pass -n NAMESPACE") != tc.wantN {
			t.Errorf("%v: exit %d, stderr %q; want an error that checks --kubeconfig, advising -n: %v (%s)", tc.args, code, msg, tc.wantN, tc.reason)
		}
	}
}

func TestScaffoldGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "deployment-defaults.yaml", args: []string{"deployment", "testvm"}},
		{golden: "deployment-all-flags.yaml", args: []string{"deploy", "testvm", "-n", "vms", "--name", "web",
			"--replicas", "3", "--service", "80:8080", "--pdb", "2", "--grace-period", "300",
			"--allow-shared-volumes", "--image", "example.com/vmctl:test"}},
		{golden: "deployment.json", args: []string{"deployment", "testvm", "-n", "vms", "-o", "json"}},
		{golden: "daemonset-defaults.yaml", args: []string{"daemonset", "testvm", "--context", "without-namespace"}},
		{golden: "daemonset-proto-namespace-admission-policy.yaml", args: []string{"ds", "testvm", "-n", "vms",
			"--proto-namespace", "protos", "--admission-policy"}},
		{golden: "statefulset.yaml", args: []string{"statefulset", "testvm", "-n", "vms", "--replicas", "2",
			"--pdb", "50%", "--service", "22", "--pod-monitor"}},
		{golden: "crd.yaml", args: []string{"crd"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			out, errOut, err := runScaffold(t, tt.args...)
			if err != nil {
				t.Fatalf("scaffold %s: %v", strings.Join(tt.args, " "), err)
			}
			if errOut != "" {
				t.Errorf("stderr = %q, want nothing", errOut)
			}
			path := filepath.Join("testdata", "scaffold", tt.golden)
			if updateGolden() {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./plugin/ -run TestScaffoldGolden -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("scaffold %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
			}
		})
	}
}

// TestScaffoldCRDIsNoFleets: what every fleet shares comes from scaffold
// crd alone, never with a fleet's manifests, so deleting one fleet's leaves
// the others' stores.
func TestScaffoldCRDIsNoFleets(t *testing.T) {
	fleet, _, err := runScaffold(t, "deployment", "testvm")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fleet, "kind: CustomResourceDefinition") || strings.Contains(fleet, "kind: ClusterRole\n") {
		t.Errorf("a fleet's manifests hold what every fleet shares:\n%s", fleet)
	}
	out, _, err := runScaffold(t, "crd", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []metav1.PartialObjectMetadata
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("scaffold crd -o json: %v:\n%s", err, out)
	}
	var got []string
	for _, o := range list.Items {
		got = append(got, o.Kind+"/"+o.Name)
	}
	want := []string{"CustomResourceDefinition/vmrevisionstores.vmctl.kubevirt.io",
		"ClusterRole/vmctl-vmrevisionstores-view", "ClusterRole/vmctl-vmrevisionstores-edit"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scaffold crd -o json (-want +got):\n%s", diff)
	}
	if _, _, err := runScaffold(t, "crd", "testvm"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("scaffold crd testvm: %v, want an error", err)
	}
}

// TestScaffoldWarnsOfNoStoreCRD: on a cluster without the revision
// stores' CRD, kubectl apply would make all but the store, so scaffold says
// how to install it, and --strict refuses.
func TestScaffoldWarnsOfNoStoreCRD(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apiversion.Info{GitVersion: serverVersion}
	virt := kubevirtfake.NewSimpleClientset(deployedKubeVirt("v1.8.0"), &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"},
		Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	})
	f := fakeapi.NewFactory(t, "vms", kube, virt)
	const want = "Warning: the cluster has no CRD vmrevisionstores.vmctl.kubevirt.io, so kubectl apply would make all but the workload's revision store " +
		"and its agents no VM: install it once, as cluster-admin, with `kubectl vmctl scaffold crd | kubectl apply -f -`\n"
	for _, strict := range []bool{false, true} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		args := []string{"deployment", "testvm"}
		if strict {
			args = append(args, "--strict")
		}
		err := opRun(t.Context(), f, newCmdScaffold(f, NewScaffoldOptions(streams)), args...)
		switch {
		case strict && (err == nil || !strings.Contains(err.Error(), "no CRD vmrevisionstores.vmctl.kubevirt.io") || out.Len() > 0):
			t.Errorf("--strict: %v, printed %d bytes; want the CRD named and nothing printed", err, out.Len())
		case !strict && (err != nil || errOut.String() != want || !strings.Contains(out.String(), "kind: VMRevisionStore")):
			t.Errorf("scaffold: %v, stderr %q; want %q and the manifests", err, errOut.String(), want)
		}
	}
}

func TestScaffoldNamespace(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{args: []string{"ds", "testvm"}, want: "from-kubeconfig"},
		{args: []string{"ds", "testvm", "--context", "without-namespace"}, want: "default"},
		{args: []string{"ds", "testvm", "-n", "explicit"}, want: "explicit"},
		{args: []string{"ds", "testvm", "--namespace", "explicit", "--context", "without-namespace"}, want: "explicit"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := runScaffold(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range strings.Split(out, "---\n") {
				if strings.Contains(doc, "kind: ValidatingAdmissionPolicy") || strings.Contains(doc, "kind: PriorityClass") || strings.Contains(doc, "kind: CustomResourceDefinition") || strings.Contains(doc, "kind: ClusterRole\n") {
					continue // cluster-scoped
				}
				if !strings.Contains(doc, "\n  namespace: "+tt.want+"\n") {
					t.Errorf("document lacks namespace %s:\n%s", tt.want, doc)
				}
			}
		})
	}
}

func TestScaffoldErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "no args", args: nil, want: []string{"scaffold needs a KIND and a PROTOTYPE, got 0", scaffold.ValidKinds}},
		{name: "one arg", args: []string{"deploy"}, want: []string{"got 1 argument", "run `kubectl vmctl scaffold deployment PROTOTYPE`"}},
		{name: "three args", args: []string{"deployment", "a", "b"}, want: []string{"got 3 argument"}},
		{name: "unknown kind", args: []string{"replicaset", "testvm"},
			want: []string{`unknown workload kind "replicaset"`, "deployment (deploy), daemonset (ds), statefulset (sts)"}},
		{name: "replicas on daemonset", args: []string{"ds", "testvm", "--replicas", "2"}, want: []string{"--replicas does not apply to a DaemonSet"}},
		{name: "bad output", args: []string{"deploy", "testvm", "-o", "wide"}, want: []string{`--output must be yaml or json, not "wide"`}},
		{name: "bad service", args: []string{"deploy", "testvm", "--service", "http"}, want: []string{"--service: invalid service port"}},
		{name: "bad pdb", args: []string{"deploy", "testvm", "--pdb", "lots"}, want: []string{"--pdb: invalid PodDisruptionBudget minAvailable"}},
		{name: "bad prototype", args: []string{"deploy", "Test_VM"}, want: []string{"cannot scaffold deployment", `invalid prototype name "Test_VM"`}},
		{name: "bad name", args: []string{"sts", "testvm", "--name", "Web"}, want: []string{"cannot scaffold statefulset", `invalid name "Web"`, "pass --name"}},
		{name: "bad namespace", args: []string{"deploy", "testvm", "-n", "Bad_NS"}, want: []string{`invalid namespace "Bad_NS"`}},
		{name: "short grace period", args: []string{"deploy", "testvm", "--grace-period", "5"}, want: []string{"grace period 5s is too short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runScaffold(t, tt.args...)
			if err == nil {
				t.Fatalf("scaffold %v succeeded, want an error", tt.args)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if out != "" {
				t.Errorf("printed %q before failing, want nothing", out)
			}
		})
	}
}

func TestScaffoldIsRegistered(t *testing.T) {
	cmd, _, err := NewCmdVmctl(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{"scaffold"})
	if err != nil || cmd.Name() != "scaffold" {
		t.Fatalf("kubectl vmctl has no scaffold command: %v", err)
	}
	if !strings.Contains(cmd.Example, "kubectl vmctl scaffold") || !strings.Contains(cmd.Example, "| kubectl apply -f -") {
		t.Errorf("examples should read `kubectl vmctl scaffold ... | kubectl apply -f -`:\n%s", cmd.Example)
	}
}

func TestScaffoldWarnsWhenGuestGracePeriodDoesNotFit(t *testing.T) {
	proto := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{TerminationGracePeriodSeconds: ptr.To[int64](300)},
		}},
	}
	for _, tt := range []struct {
		args []string
		warn string
	}{
		// 300s for the guest, 10s for KubeVirt, 10s margin: 320s.
		{[]string{"deployment", "testvm", "-n", "default"}, "Warning: prototype default/testvm: its guest gets 5m0s to shut down (spec.template.spec.terminationGracePeriodSeconds), " +
			"but the agent waits at most 2m50s for the VM to go (--delete-timeout, the Pod's grace period less 10s), so the VM may outlive its Pod; " +
			"give the agent Pods a grace period of 320s or more (kubectl vmctl scaffold --grace-period 320), or shorten the guest's\n"},
		{[]string{"deployment", "testvm", "-n", "default", "--grace-period", "320"}, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, stderr, err := runScaffoldWith(t, []runtime.Object{proto}, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if stderr != tt.warn {
				t.Errorf("stderr %q, want %q", stderr, tt.warn)
			}
			if !strings.Contains(out, "kind: Deployment") {
				t.Errorf("no manifests on stdout with the warning")
			}
		})
	}
}

// TestScaffoldNotesEvictionStrategyOverride: a prototype asking for another
// evictionStrategy than External is said once, by scaffold, as a note:
// vmctl overrides it on purpose, so --strict lets it pass.
func TestScaffoldNotesEvictionStrategyOverride(t *testing.T) {
	for _, s := range []kubevirtv1.EvictionStrategy{kubevirtv1.EvictionStrategyLiveMigrate,
		kubevirtv1.EvictionStrategyLiveMigrateIfPossible, kubevirtv1.EvictionStrategyNone, kubevirtv1.EvictionStrategyExternal} {
		t.Run(string(s), func(t *testing.T) {
			proto := &kubevirtv1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "default"},
				Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
					Spec: kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: ptr.To(s)},
				}},
			}
			want := ""
			if s != kubevirtv1.EvictionStrategyExternal {
				want = "Warning: prototype default/testvm: it asks for evictionStrategy " + string(s) + ", but its VMs run with External, " +
					"so that a drain waits for their agent Pods (a VM pinned to its Pod's node cannot migrate)\n"
			}
			out, stderr, err := runScaffoldWith(t, []runtime.Object{proto}, "deployment", "testvm", "-n", "default", "--strict")
			if err != nil {
				t.Fatalf("--strict: %v; an override vmctl makes on purpose is a note, not a warning", err)
			}
			if stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if !strings.Contains(out, "kind: Deployment") {
				t.Errorf("no manifests on stdout with the note")
			}
		})
	}
}

// TestScaffoldRefusesAMarkedPrototype: a prototype copied from a derived
// VM, with vmctl's markers, is refused as the agent refuses it (one
// check, derive's), with the commands that remove them; nothing is
// printed, --strict or not.
func TestScaffoldRefusesAMarkedPrototype(t *testing.T) {
	copied := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms", Labels: map[string]string{contract.LabelPod: "web-1", "app": "web"}},
		Spec:       kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
	want := "scaffold pins no revision its agents would refuse: prototype vms/testvm carries vmctl's derived-VM markers (label " + contract.LabelPod +
		"), as a copy of a derived VM does; remove them so that gc and status do not take it for a derived VM: kubectl label vm testvm -n vms " + contract.LabelPod + "-"
	for _, args := range [][]string{nil, {"--strict"}} {
		out, stderr, err := runScaffoldWith(t, []runtime.Object{copied}, append([]string{"deployment", "testvm", "-n", "vms"}, args...)...)
		if err == nil || err.Error() != want {
			t.Errorf("scaffold %v: error %v; want %q", args, err, want)
		}
		if out != "" || stderr != "" {
			t.Errorf("scaffold %v printed stdout %q, stderr %q; want nothing", args, out, stderr)
		}
	}
}

// TestScaffoldWarnsWhatTheAgentsWillRefuse: scaffold says on stderr, in the
// agents' words, what they will refuse, and still prints the manifests;
// --strict makes it an error and prints nothing.
func TestScaffoldWarnsWhatTheAgentsWillRefuse(t *testing.T) {
	sharedPVC := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "vms"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{{
				Name: "data", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
				}},
			}}},
		}},
	}
	for _, tt := range []struct {
		name  string
		proto *kubevirtv1.VirtualMachine
		args  []string
		// agentSays is the start of what the agent's Event would say.
		agentSays string
	}{
		{"shared writable volume", sharedPVC, nil, "prototype vms/testvm: every derived VM would write to the same disk through volume \"data\""},
		{"shared volume allowed", sharedPVC, []string{"--allow-shared-volumes"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.proto != nil {
				objs = append(objs, tt.proto)
			}
			args := append([]string{"deployment", "testvm", "-n", "vms"}, tt.args...)
			out, stderr, err := runScaffoldWith(t, objs, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "kind: Deployment") {
				t.Errorf("no manifests on stdout beside the warning")
			}
			if tt.agentSays == "" {
				if stderr != "" {
					t.Errorf("stderr %q; want nothing", stderr)
				}
				return
			}
			if !strings.HasPrefix(stderr, "Warning: "+tt.agentSays) {
				t.Errorf("stderr %q; want a warning starting %q", stderr, tt.agentSays)
			}

			out, stderr, err = runScaffoldWith(t, objs, append(args, "--strict")...)
			if err == nil || !strings.Contains(err.Error(), tt.agentSays) {
				t.Errorf("--strict: error %v; want one saying %q", err, tt.agentSays)
			}
			if out != "" || stderr != "" {
				t.Errorf("--strict printed stdout %q, stderr %q; want nothing", out, stderr)
			}
		})
	}
}
