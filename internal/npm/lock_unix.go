//go:build unix

package npm

import (
	"fmt"
	"os"
	"syscall"
)

// lock holds an exclusive flock on path until the returned function runs.
// The kernel drops it when the process dies, so a killed install leaves no
// stale lock behind.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
