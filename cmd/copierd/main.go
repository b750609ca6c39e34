// Command copierd is the copier's node process and its tools, one binary with subcommands:
//
//	copierd run          run a node: claim follower accounts, copy their masters' trades
//	copierd migrate      apply the database migrations
//	copierd sim          serve a simulated trade server over the bridge protocol
//	copierd demo         run a whole copier on this machine and show it working
//	copierd stress       run real node processes under load and faults, and give a verdict
//	copierd healthcheck  ask this machine's node for /healthz (a container's HEALTHCHECK)
//	copierd help         list subcommands; copierd CMD -h documents every flag
//
// Every flag has an environment equivalent (COPIER_ plus the flag name in upper case with
// dashes as underscores, e.g. --database-url → COPIER_DATABASE_URL); a flag given on the
// command line wins over the environment.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure
	exitUsage   = 2 // bad flags or configuration, reported before touching anything
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"run", "run a node: claim follower accounts and copy their masters' trades", runRun},
		{"migrate", "apply the database migrations (exit 0 when up to date)", runMigrate},
		{"sim", "serve a simulated trade server over the bridge protocol", runSim},
		{"demo", "run masters, followers, nodes and a simulator on this machine", runDemo},
		{"stress", "run real node processes under load and faults, and give a verdict", runStress},
		{"healthcheck", "ask this machine's node for /healthz (a container's HEALTHCHECK)", runHealthcheck},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "copierd: unknown command %q (see copierd help)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "copierd: a horizontally scaled trade-copier node and its tools")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: copierd COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'copierd COMMAND -h' for the flags of a command. Every flag can also be set")
	fmt.Fprintln(w, "in the environment: --database-url is COPIER_DATABASE_URL, and so on.")
}
