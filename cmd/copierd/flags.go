package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snapcopier/copier/internal/gctune"
)

// newFlagSet returns a flag set for a subcommand that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: copierd %s\n\n%s\n\nFlags (environment variable in brackets):\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// envName is the environment equivalent of a flag: --database-url → COPIER_DATABASE_URL.
func envName(flagName string) string {
	return "COPIER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags applies environment values to flags not given on the command line, then
// parses args. It returns exitOK to continue, or the code to exit with (-h prints usage).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	// Document the environment names in the usage text.
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "[COPIER_") {
			f.Usage += " [" + envName(f.Name) + "]"
		}
	})
	// The flag package prints the whole usage on any error: a mistyped flag would bury
	// its one-line message under every flag's help. Print the error and a hint instead.
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return exitOK, false
		}
		fmt.Fprintf(stderr, "copierd %s: %v (see: copierd %s -h)\n", fs.Name(), err, fs.Name())
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "copierd %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var bad error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || bad != nil {
			return
		}
		if v := os.Getenv(envName(f.Name)); v != "" { // set but empty counts as unset
			if err := fs.Set(f.Name, v); err != nil {
				bad = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
			}
		}
	})
	if bad != nil {
		fmt.Fprintf(stderr, "copierd %s: %v\n", fs.Name(), bad)
		return exitUsage, false
	}
	return exitOK, true
}

// addGCPercentFlag registers --gc-percent on fs: the commands that run nodes take it.
func addGCPercentFlag(fs *flag.FlagSet, p *int) {
	fs.IntVar(p, "gc-percent", gctune.DefaultPercent, fmt.Sprintf("the Go collector's heap target in per cent, as GOGC (%d–%d): collect when the heap has grown this much since the last collection; a GOGC variable wins over this default but not over the flag given; GOMEMLIMIT still bounds the heap", gctune.MinPercent, gctune.MaxPercent))
}

// applyGCPercent applies --gc-percent (internal/gctune): the flag, given on the command
// line or as COPIER_GC_PERCENT, wins over GOGC; its default does not.
func applyGCPercent(fs *flag.FlagSet, percent int) (string, gctune.Source, error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "gc-percent" })
	v, from, err := gctune.Apply(percent, explicit, os.Getenv)
	if err != nil {
		return "", "", fmt.Errorf("--gc-percent: %w", err)
	}
	return v, from, nil
}
