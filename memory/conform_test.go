package memory

import (
	"testing"

	"github.com/rcm-dev/rcm/internal/pgtest"
)

// opener opens a fresh, empty store of one backend for a test.
type opener func(t testing.TB, opts Options) *Store

// eachStore runs test on every backend: the conformance suite. Tests that
// call it hold both backends to one behaviour (the same reads after the
// same writes). PostgreSQL is the database of RCM_TEST_POSTGRES (default
// postgres://postgres@127.0.0.1:5432/test), each test in a schema of its
// own (package pgtest); without one reachable the PostgreSQL runs skip,
// and fail under CI=true.
func eachStore(t *testing.T, test func(t *testing.T, openTest opener)) {
	t.Run("bbolt", func(t *testing.T) { test(t, openTest) })
	t.Run("postgres", func(t *testing.T) { test(t, openPostgresTest) })
}

func openPostgresTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := OpenPostgres(pgtest.Schema(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
