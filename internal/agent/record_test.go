package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestRecord(t *testing.T) {
	dir := t.TempDir()
	if rec, err := readRecord(filepath.Join(dir, "missing"), testPodUID); rec.known || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readRecord(a missing directory) = %+v, %v; want not known, a not-exist error", rec, err)
	}
	if rec, err := readRecord("", testPodUID); rec.known || err != nil {
		t.Errorf(`readRecord("") = %+v, %v; want not known, no error`, rec, err)
	}
	if rec, err := readRecord(dir, testPodUID); rec != (madeRecord{known: true}) || err != nil {
		t.Errorf("readRecord(an empty directory) = %+v, %v; want known, no VM", rec, err)
	}
	for _, name := range []string{"first", "second"} {
		if err := writeRecord(dir, testPodUID, name); err != nil {
			t.Fatal(err)
		}
		if rec, err := readRecord(dir, testPodUID); rec != (madeRecord{known: true, name: name}) || err != nil {
			t.Errorf("readRecord() after writing %q = %+v, %v", name, rec, err)
		}
	}
	if rec, err := readRecord(dir, "another-pod"); rec.known || err == nil {
		t.Errorf("readRecord() of another Pod's record = %+v, %v; want not known, an error", rec, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != recordFile {
		t.Errorf("state directory holds %v, want only %s", entries, recordFile)
	}
}

// TestStateDirSkipsTheLabelLook: an agent whose Pod has a state directory
// with no record knows no agent of its Pod made a VM: it does not list the
// VMs labelled for its Pod, and records the VM's name before it makes it.
func TestStateDirSkipsTheLabelLook(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, withStateDir(dir), []*kubevirtv1.VirtualMachine{prototype(testProto)})
	recordedFirst := false
	h.api.created = func(vm *kubevirtv1.VirtualMachine) {
		rec, _ := readRecord(dir, testPodUID)
		recordedFirst = rec.name == vm.Name
	}
	h.start()
	h.watchFollowed()
	want := []string{"get revisions " + testStore, "watch " + testVM + " rv= initial", "create " + testVM}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	if !recordedFirst {
		t.Error("the VM was made before the record named it")
	}
}

// TestRestartFollowsTheRecordedVM: a restarted agent follows the VM its
// Pod's record names, under whatever name, with no look by label; a record
// another Pod left, or none to read, makes it look by label as before.
func TestRestartFollowsTheRecordedVM(t *testing.T) {
	const olderName = "vm-of-an-older-rule"
	for _, tt := range []struct {
		name   string
		record func(dir string) error
		want   []string
	}{{
		name:   "its own record",
		record: func(dir string) error { return writeRecord(dir, testPodUID, olderName) },
		want:   []string{"get revisions " + testStore, "watch " + olderName + " rv= initial"},
	}, {
		name:   "another Pod's record",
		record: func(dir string) error { return writeRecord(dir, "dead-pod-uid", testVM) },
		want:   []string{"get revisions " + testStore, "watch " + testPodVMs + " rv= initial", "watch " + olderName + " rv= initial"},
	}, {
		name:   "no state directory",
		record: os.Remove,
		want:   []string{"get revisions " + testStore, "watch " + testPodVMs + " rv= initial", "watch " + olderName + " rv= initial"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.record(dir); err != nil {
				t.Fatal(err)
			}
			mine := derived(t, testIdentity, "mine-uid")
			mine.Name = olderName
			h := newHarness(t, withStateDir(dir), []*kubevirtv1.VirtualMachine{prototype(testProto), mine})
			h.start()
			h.watchFollowed()
			if diff := cmp.Diff(tt.want, h.api.requestLog()); diff != "" {
				t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
			}
			h.waitEvent(corev1.EventTypeNormal, ReasonAdopted)
			if h.api.object(testVM) != nil {
				t.Errorf("VM %s made beside %s, which is this Pod's already", testVM, olderName)
			}
		})
	}
}

// TestRecordRefused: a state directory that cannot take the record stops
// the agent before it makes a VM a restarted agent would not know of, and
// says what to do.
func TestRecordRefused(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, withStateDir(notADir), []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.start()
	h.waitReadyz(503, ReasonCreateFailed)
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonCreateFailed)
	if !strings.Contains(ev.Message, "mount an emptyDir volume there") {
		t.Errorf("Event %q does not say what to do", ev.Message)
	}
	if n := h.api.count("create"); n != 0 {
		t.Errorf("%d VM creates, want none", n)
	}
}

func withStateDir(dir string) Config {
	cfg := testConfig()
	cfg.StateDir = dir
	return cfg
}
