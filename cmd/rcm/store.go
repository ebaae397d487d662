package main

import (
	"fmt"
	"os"

	"github.com/rcm-dev/rcm/memory"
)

const storeUsage = `Usage: rcm store compact [--db FILE]

Compacts the store: copies its live data into a new file and renames it
over the old one, giving back the space of deleted sessions (bbolt reuses
freed pages but never shrinks its file). Stop rcm serve first: the store
is locked while a proxy runs, and compact refuses then.
`

// store runs the store's maintenance subcommands.
func store(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Print(storeUsage)
		return nil
	}
	if len(args) == 0 || args[0] != "compact" {
		fmt.Fprint(os.Stderr, storeUsage)
		return fmt.Errorf("store: want a subcommand: compact")
	}
	var db string
	opts := []option{{flag: "db", env: "RCM_DB", help: "bbolt store file (default: rcm/rcm.db under the user's data directory)", set: stringOpt(&db)}}
	if err := parseOptions("store compact", args[1:], opts, false, storeUsage); err != nil {
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
