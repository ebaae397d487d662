//go:build !unix

package npm

// lock: without flock, installs into one directory are not serialized
// across processes; run one at a time there.
func lock(string) (func(), error) { return func() {}, nil }
