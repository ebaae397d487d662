package main

import (
	"fmt"
)

const benchUsage = `Usage:
  rcm bench replay [flags]   replay sessions through the proxy against a scripted upstream
`

func bench(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("bench: missing subcommand\n\n%s", benchUsage)
	}
	switch args[0] {
	default:
		return fmt.Errorf("bench: unknown subcommand %q\n\n%s", args[0], benchUsage)
	}
}
