package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthSynopsis is the help text of the command.
const healthSynopsis = `Asks the node of this machine (or container) whether it is healthy: GET /healthz
(or --path) on the port --http names, on the loopback address. Exit 0 on 200, 1 otherwise.
It reads the same COPIER_HTTP as run, so a container's HEALTHCHECK needs neither a shell
nor curl: HEALTHCHECK CMD ["/copierd", "healthcheck"].`

// runHealthcheck is the healthcheck subcommand.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("healthcheck", healthSynopsis, stderr)
	addr := fs.String("http", "", "the node's --http address; its port is asked on 127.0.0.1 (required)")
	path := fs.String("path", "/healthz", "path to GET: /healthz (the process is up) or /readyz (it holds a trusted lease)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *addr == "" {
		fmt.Fprintln(stderr, "copierd healthcheck: --http (or COPIER_HTTP) is required")
		return exitUsage
	}
	if err := checkListenAddr("http", *addr); err != nil {
		fmt.Fprintf(stderr, "copierd healthcheck: %s\n", oneLine(err))
		return exitUsage
	}
	if *timeout <= 0 || len(*path) == 0 || (*path)[0] != '/' {
		fmt.Fprintln(stderr, "copierd healthcheck: --timeout must be positive and --path start with /")
		return exitUsage
	}
	_, port, _ := net.SplitHostPort(*addr)
	url := "http://" + net.JoinHostPort("127.0.0.1", port) + *path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "copierd healthcheck: %s\n", oneLine(err))
		return exitUsage
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "copierd healthcheck: %s: %s\n", url, oneLine(err))
		return exitFailure
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "copierd healthcheck: %s: %s %s\n", url, resp.Status, oneLine(fmt.Errorf("%s", body)))
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: %s", url, body)
	return exitOK
}
