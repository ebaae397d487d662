package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/rcm-dev/rcm/memory"
)

const storeUsage = `Usage: rcm store compact [--db FILE]
       rcm store migrate [--store URL]
       rcm store check [--store URL]

compact copies a bbolt store's live data into a new file and renames it
over the old one, giving back the space of deleted sessions (bbolt reuses
freed pages but never shrinks its file). Stop rcm serve first: the store
is locked while a proxy runs, and compact refuses then.

migrate brings a PostgreSQL store's schema up to this rcm's (rcm serve does
it too at start), one replica at a time; check prints its schema version and
what it holds, and fails when the schema is not this rcm's. --store (or
RCM_STORE) is a postgres:// URL; the libpq PG* variables fill what it leaves
out.
`

// store runs the store's maintenance subcommands.
func store(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Print(storeUsage)
		return nil
	}
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, storeUsage)
		return errors.New("store: want a subcommand: compact, migrate or check")
	}
	switch args[0] {
	case "compact":
		return compact(args[1:])
	case "migrate", "check":
		var dsn string
		if err := parseOptions("store "+args[0], args[1:], []option{storeOption(&dsn)}, false, storeUsage); err != nil {
			return err
		}
		if !memory.IsPostgres(dsn) {
			return fmt.Errorf("store %s: --store %q: want a postgres:// URL", args[0], memory.Redacted(dsn))
		}
		if args[0] == "migrate" {
			before, after, err := memory.Migrate(dsn)
			if err != nil {
				return err
			}
			fmt.Printf("migrated %s: schema version %d -> %d\n", memory.Redacted(dsn), before, after)
			return nil
		}
		c, err := memory.CheckPostgres(dsn)
		if err != nil {
			return err
		}
		fmt.Printf("%s: schema version %d (this rcm's: %d), %d sessions, %d calls under way\n", memory.Redacted(dsn), c.Version, c.Want, c.Sessions, c.Claims)
		return nil
	}
	fmt.Fprint(os.Stderr, storeUsage)
	return fmt.Errorf("store: unknown subcommand %q: want compact, migrate or check", args[0])
}

// compact is rcm store compact.
func compact(args []string) error {
	var db string
	opts := []option{{flag: "db", env: "RCM_DB", help: "bbolt store file (default: rcm/rcm.db under the user's data directory)", set: stringOpt(&db)}}
	if err := parseOptions("store compact", args, opts, false, storeUsage); err != nil {
		return err
	}
	if db == "" {
		var err error
		if db, err = memory.DefaultPath(); err != nil {
			return fmt.Errorf("db: %w (set --db)", err)
		}
	}
	before, after, err := memory.Compact(db, memory.Options{})
	if err != nil {
		return err
	}
	fmt.Printf("compacted %s: %d -> %d bytes\n", db, before, after)
	return nil
}
