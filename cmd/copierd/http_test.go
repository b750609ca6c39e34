package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/snapcopier/copier/actors"
)

// TestPublicEndpointsCarrySecurityHeaders: health, readiness, metrics and the status page
// are served on any address, so they carry the same protective headers as the console.
func TestPublicEndpointsCarrySecurityHeaders(t *testing.T) {
	web := &statusHTTP{title: "t", nodes: func() []*actors.Node { return nil }}
	srv := httptest.NewServer(web.handler())
	defer srv.Close()
	for _, path := range []string{"/status", "/metrics", "/healthz", "/readyz", "/", "/nothing"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
			if got := res.Header.Get(h); got != want {
				t.Errorf("%s: %s = %q, want %q", path, h, got, want)
			}
		}
		if res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
	}
}
