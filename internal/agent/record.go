package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// The agent records the name of the VM it is about to make, before it
// makes it, in its state directory (Config.StateDir): the Pod's emptyDir
// volume, which lives as long as the Pod, through restarts of its
// containers. A restarted agent reads there which VM an agent of its Pod
// made, whatever name rule that agent followed, and follows that VM by
// name at once. No record means no agent of this Pod made a VM: a starting
// agent needs no look by label then (findMade), a LIST the API server
// would answer for every agent of a scale-up or a rollout.
//
// The record starts with the Pod's UID, so one another Pod left (a
// directory that is not this Pod's own emptyDir) is not taken for this
// Pod's: the agent looks by label then, as it does without a state
// directory.

// recordFile is the record's name in the state directory.
const recordFile = "vm"

// madeRecord is what the state directory says of the VM this Pod's agents made.
type madeRecord struct {
	// known is false when there is no record to trust: no state
	// directory, or one that holds another Pod's record or cannot be read.
	known bool
	// name is the VM an agent of this Pod made last; "" when none did.
	name string
}

// readRecord reads the record of the Pod podUID in dir. Its error says why
// the record cannot be trusted; the record is then not known.
func readRecord(dir string, podUID types.UID) (madeRecord, error) {
	if dir == "" {
		return madeRecord{}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); err != nil {
			return madeRecord{}, fmt.Errorf("state directory: %w", err)
		}
		return madeRecord{known: true}, nil
	}
	if err != nil {
		return madeRecord{}, err
	}
	uid, name, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if types.UID(uid) != podUID || name == "" {
		return madeRecord{}, fmt.Errorf("%s holds %q, not a record of Pod UID %s", filepath.Join(dir, recordFile), b, podUID)
	}
	return madeRecord{known: true, name: name}, nil
}

// writeRecord records name in dir as the VM the Pod podUID's agent makes.
// The record is replaced whole (a rename), so a restarted agent reads the
// one before or this one, never part of either.
func writeRecord(dir string, podUID types.UID, name string) error {
	f, err := os.CreateTemp(dir, "."+recordFile+"-*")
	if err != nil {
		return err
	}
	// Left only when the rename failed; a leftover is no record.
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = fmt.Fprintf(f, "%s %s\n", podUID, name)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, recordFile))
	}
	return err
}

// recordMaking records, before the agent makes the VM called name, that it
// does, unless the record says so already. It fails when the state
// directory cannot take the record: the VM is not made then, for a
// restarted agent would not know of it.
func (a *Agent) recordMaking(name string) error {
	if a.stateDir == "" || a.recorded == name {
		return nil
	}
	if err := writeRecord(a.stateDir, a.pod.PodUID, name); err != nil {
		return fmt.Errorf("cannot record the VM's name in --state-dir %s, so a restarted agent would not know of it: %w; "+
			"mount an emptyDir volume there, as kubectl vmctl scaffold writes it", a.stateDir, err)
	}
	a.recorded = name
	return nil
}
