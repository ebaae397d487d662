package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `rcm: a task-aware context manager for coding agents.

Usage:
  rcm serve [flags]          run the proxy (rcm serve --help lists the flags)
` + benchCommands + `  rcm inspect [SESSION]      show a running rcm's sessions, tasks, records and decisions
                             (live in a browser: http://127.0.0.1:8787/rcm/)
  rcm store compact          shrink the store file to its live data (rcm serve stopped)
  rcm store migrate          bring a PostgreSQL store's schema up to date (check: verify it)
  rcm statusline             one line for Claude Code's status line (reads its session JSON on stdin)
  rcm version                print the version

Point your harness's OpenAI-compatible base URL at http://127.0.0.1:8787/v1.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = serve(args)
	case "bench":
		err = bench(args)
	case "inspect":
		err = inspect(args)
	case "store":
		err = store(args)
	case "statusline":
		err = statusline(args, os.Stdin, os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("rcm", version)
	default:
		if isHelp(cmd) {
			fmt.Print(usage)
			return
		}
		fmt.Fprintf(os.Stderr, "rcm: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rcm:", err)
		os.Exit(1)
	}
}

// isHelp reports whether a command's argument asks for its usage.
func isHelp(arg string) bool { return arg == "help" || arg == "--help" || arg == "-h" }
