// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the database of RCM_TEST_POSTGRES (default
// postgres://postgres@127.0.0.1:5432/test, the development and CI
// machines' trust-auth server), dropped after the test. Without a
// reachable server the test skips, and fails under CI=true.
package pgtest

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

// Server is the database the tests use.
func Server() string {
	if u := os.Getenv("RCM_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

// redacted is u without a password.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// Need skips tb (fails it under CI=true) when the server cannot be
// reached.
func Need(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, Server())
	if err == nil {
		conn.Close(ctx)
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("PostgreSQL at %s unreachable under CI=true: %v", redacted(Server()), err)
	}
	tb.Skipf("PostgreSQL at %s unreachable (set RCM_TEST_POSTGRES): %v", redacted(Server()), err)
}

// Schema makes an empty schema for tb, dropped after it, and returns the
// URL of the server's database with it as the search path.
func Schema(tb testing.TB) string {
	tb.Helper()
	Need(tb)
	var b [6]byte
	rand.Read(b[:])
	schema := "rcm_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, Server())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(ctx, Server())
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(Server())
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
