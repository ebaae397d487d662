package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "rcm.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "rcm.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode %o, want 600", got)
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode %o, want 700", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Timeout: -1}, {MaxEvents: -1}} {
		if o.Validate() == nil {
			t.Errorf("%+v: Validate() = nil, want an error", o)
		}
		if _, err := Open(filepath.Join(t.TempDir(), "x.db"), o); err == nil {
			t.Errorf("%+v: Open succeeded", o)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data/home")
	if p, err := DefaultPath(); err != nil || p != "/data/home/rcm/rcm.db" {
		t.Errorf("with XDG_DATA_HOME: %q, %v", p, err)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored") // the XDG spec says relative paths are invalid
	t.Setenv("HOME", "/home/u")
	want := "/home/u/.local/share/rcm/rcm.db"
	if runtime.GOOS == "darwin" {
		want = "/home/u/Library/Application Support/rcm/rcm.db"
	}
	if p, err := DefaultPath(); err != nil || p != want {
		t.Errorf("without XDG_DATA_HOME: %q, %v; want %q", p, err, want)
	}
}

func setSchema(t *testing.T, path string, v []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSchema(t *testing.T) {
	t.Run("newer version refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rcm.db")
		setSchema(t, path, binary.BigEndian.AppendUint64(nil, schemaVersion+1))
		_, err := Open(path, Options{})
		if !errors.Is(err, ErrSchema) {
			t.Fatalf("Open = %v, want ErrSchema", err)
		}
		for _, want := range []string{path, "version 2", "knows up to 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
	t.Run("malformed version", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rcm.db")
		setSchema(t, path, []byte("v1"))
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "version value") {
			t.Fatalf("Open = %v, want a schema error", err)
		}
	})
	t.Run("empty bbolt file initialised", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rcm.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.touch("s", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		var v []byte
		s.b.(*boltStore).db.View(func(tx *bolt.Tx) error {
			v = bytes.Clone(tx.Bucket(bucketMeta).Get(keySchema))
			return nil
		})
		if !bytes.Equal(v, binary.BigEndian.AppendUint64(nil, schemaVersion)) {
			t.Errorf("schema version stored as %x", v)
		}
	})
	t.Run("not a bbolt file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rcm.db")
		junk := bytes.Repeat([]byte("not a database "), 1000)
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open = %v, want an error naming the file", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, junk) {
			t.Error("Open modified a file it could not read")
		}
	})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.putRecord("s", Record{Task: "t1", Summary: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, found, err := s.Record("s", "t1")
	if err != nil || !found || r.Summary != "kept" {
		t.Fatalf("after reopen: %+v, %v, %v", r, found, err)
	}
}

// Helper processes: the test binary re-executed with helperEnv set runs
// TestHelperProcess only, which acts on the store at pathEnv.
const (
	helperEnv = "RCM_MEMORY_TEST_HELPER"
	pathEnv   = "RCM_MEMORY_TEST_PATH"
)

func helperCmd(mode, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, pathEnv+"="+path)
	return cmd
}

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	path := os.Getenv(pathEnv)
	switch mode {
	case "open":
		_, err := Open(path, Options{})
		if errors.Is(err, ErrLocked) {
			os.Stdout.WriteString("locked: " + err.Error() + "\n")
			os.Exit(0)
		}
		os.Stdout.WriteString("unexpected: " + errString(err) + "\n")
		os.Exit(3)
	case "write":
		writeLoop(path)
	}
	os.Exit(4)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestSecondProcessGetsErrLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	out, err := helperCmd("open", path).Output()
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("helper: %v; output %q", err, out)
	}
	for _, want := range []string{"locked: ", path, "another rcm process"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("helper output %q does not contain %q", out, want)
		}
	}
	// Not a speed assertion: a hang would block forever, a lock timeout of
	// about a second (plus process start) must come back well within this.
	if elapsed > 30*time.Second {
		t.Errorf("second open took %v", elapsed)
	}
	// The lock is released with the first store.
	s.Close()
	if out, _ := helperCmd("open", path).Output(); !bytes.Contains(out, []byte("unexpected: <nil>")) {
		t.Errorf("helper could not open the store after Close: %q", out)
	}
}

// TestUpdateIsOneTransaction: the writes of one Update land together, and
// an error in any of them leaves none behind.
func TestUpdateIsOneTransaction(t *testing.T) {
	s := openTest(t, Options{})
	now := time.Unix(1700000000, 0)
	err := s.Update(func(w *Tx) error {
		if err := w.Touch("s1", "", now); err != nil {
			return err
		}
		if err := w.PutTask("s1", Task{ID: "t1", Created: now}); err != nil {
			return err
		}
		return w.PutTask("s1", Task{ID: ""}) // invalid: aborts the whole update
	})
	if err == nil {
		t.Fatal("invalid task accepted")
	}
	if _, ok, _ := s.Session("s1"); ok {
		t.Fatal("a failed update left the session behind")
	}
	if ts, _ := s.Tasks("s1"); len(ts) != 0 {
		t.Fatal("a failed update left a task behind")
	}
	err = s.Update(func(w *Tx) error {
		if err := w.Touch("s1", "", now); err != nil {
			return err
		}
		if err := w.AppendEvent("s1", &Event{At: now, Task: "t1"}); err != nil {
			return err
		}
		return w.UpdateRecord("s1", "t1", func(r *Record) error {
			r.Requirements = append(r.Requirements, Requirement{Text: "fix it"})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := s.Events("s1", 0)
	r, ok, _ := s.Record("s1", "t1")
	if sess, _, _ := s.Session("s1"); sess.Calls != 1 || len(evs) != 1 || !ok || len(r.Requirements) != 1 {
		t.Fatalf("session %+v events %d record %+v", sess, len(evs), r)
	}
}
