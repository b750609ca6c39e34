package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
)

// TestHealthcheck: copierd healthcheck exits 0 when the node's /healthz answers 200 on the
// port of --http, 1 when the path answers otherwise (/readyz before a node runs) or
// nothing listens, and 2 on bad flags.
func TestHealthcheck(t *testing.T) {
	noLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); serveHTTP(ctx, l, web.handler(), 0, zerolog.Nop()) }()
	defer func() { cancel(); <-done }()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	// As in the image: the address comes from COPIER_HTTP, any host.
	if code, out, errs := runCLI(t, map[string]string{"COPIER_HTTP": ":" + port}, "healthcheck"); code != exitOK || !strings.Contains(out, "ok") {
		t.Fatalf("healthy node: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI(t, nil, "healthcheck", "--http", "0.0.0.0:"+port, "--path", "/readyz"); code != exitFailure || !strings.Contains(errs, "503") {
		t.Fatalf("/readyz without a node: exit %d %q", code, errs)
	}
	cancel()
	<-done // the deferred stop finds it stopped
	if code, _, errs := runCLI(t, nil, "healthcheck", "--http", "127.0.0.1:"+port); code != exitFailure {
		t.Fatalf("nothing listening: exit %d %q", code, errs)
	}
	for _, args := range [][]string{{"--http", "nonsense"}, {"--http", ":1", "--path", "healthz"}, {"--http", ":1", "--timeout", "0s"}} {
		unsetEnv(t, "COPIER_HTTP")
		if code, _, errs := runCLI(t, nil, append([]string{"healthcheck"}, args...)...); code != exitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("healthcheck %q: exit %d %q", args, code, errs)
		}
	}
	unsetEnv(t, "COPIER_HTTP")
	if code, _, _ := runCLI(t, nil, "healthcheck"); code != exitUsage {
		t.Errorf("healthcheck without --http: exit %d", code)
	}
}
