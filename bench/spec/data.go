package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
)

// Trajectory formats a data directory may hold (see ReadData).
const (
	FormatMiniSWE   = "mini-swe-agent"
	FormatOpenHands = "openhands"
)

// ReadData builds tasks from a data directory laid out as shared/data:
// swebench-instances.jsonl and trajectories/<format>/ holding one trajectory
// per instance (<id>.traj.json for mini-swe-agent, <id>.json for
// OpenHands). Instances without a trajectory, and trajectories that fail to
// convert, are reported and left out.
func ReadData(dir, format string) ([]Task, []trajectory.Skip, error) {
	var suffix string
	var read func(b []byte, source, id string) (*chat.Trajectory, []trajectory.Skip, error)
	switch format {
	case FormatMiniSWE:
		suffix = ".traj.json"
		read = func(b []byte, source, _ string) (*chat.Trajectory, []trajectory.Skip, error) {
			return trajectory.ReadMiniSWE(b, source)
		}
	case FormatOpenHands:
		suffix, read = ".json", trajectory.ReadOpenHands
	default:
		return nil, nil, fmt.Errorf("bench: trajectory format %q: want %s or %s", format, FormatMiniSWE, FormatOpenHands)
	}
	path := filepath.Join(dir, "swebench-instances.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	insts, skips := ReadSWEBench(f, path)
	var tasks []Task
	for i := range insts {
		inst := &insts[i]
		tp := filepath.Join(dir, "trajectories", format, inst.InstanceID+suffix)
		b, err := os.ReadFile(tp)
		if err != nil {
			reason := err.Error()
			if errors.Is(err, os.ErrNotExist) {
				reason = "no " + format + " trajectory"
			}
			skips = append(skips, trajectory.Skip{Source: path, Record: inst.InstanceID, Reason: reason})
			continue
		}
		tr, s, err := read(b, tp, inst.InstanceID)
		skips = append(skips, s...)
		if err == nil && tr.Task != inst.InstanceID {
			err = fmt.Errorf("%s: trajectory of %s", tp, tr.Task)
		}
		if err != nil {
			skips = append(skips, trajectory.Skip{Source: tp, Record: inst.InstanceID, Reason: strings.TrimPrefix(err.Error(), tp+": ")})
			continue
		}
		t, s, err := makeTask(inst, tr, inst.Repo)
		skips = append(skips, s...)
		if err != nil {
			skips = append(skips, trajectory.Skip{Source: tp, Record: inst.InstanceID, Reason: err.Error()})
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, skips, nil
}
