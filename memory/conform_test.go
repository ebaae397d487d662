package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// opener opens a fresh, empty store of one backend for a test.
type opener func(t testing.TB, opts Options) *Store

// eachStore runs test on every backend: the conformance suite. Tests that
// call it hold both backends to one behaviour (the same reads after the
// same writes). PostgreSQL is the database of RCM_TEST_POSTGRES (default
// postgres://postgres@127.0.0.1:5432/test), each test in a schema of its
// own; without one reachable the PostgreSQL runs skip, and fail under
// CI=true.
func eachStore(t *testing.T, test func(t *testing.T, openTest opener)) {
	t.Run("bbolt", func(t *testing.T) { test(t, openTest) })
	t.Run("postgres", func(t *testing.T) { test(t, openPostgresTest) })
}

// testPostgres is the database the tests use.
func testPostgres() string {
	if u := os.Getenv("RCM_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

// needPostgres skips t (fails it under CI=true) when the test database
// cannot be reached.
func needPostgres(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testPostgres())
	if err == nil {
		conn.Close(ctx)
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL at %s unreachable under CI=true: %v", Redacted(testPostgres()), err)
	}
	t.Skipf("PostgreSQL at %s unreachable (set RCM_TEST_POSTGRES): %v", Redacted(testPostgres()), err)
}

// postgresSchema makes an empty schema for t, dropped after it, and
// returns the URL of the test database with it as the search path.
func postgresSchema(t testing.TB) string {
	t.Helper()
	needPostgres(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "rcm_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testPostgres())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, testPostgres())
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(testPostgres())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPostgresTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := OpenPostgres(postgresSchema(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
