package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestParseBrokerSpecFIX: a fix:// address takes the header ids and the polling interval
// from its query, and refuses what it does not know with the reason.
func TestParseBrokerSpecFIX(t *testing.T) {
	b, err := parseBrokerSpec("fix+tls://venue:5212?target-comp-id=cServer&target-sub-id=TRADE&poll-positions=2s")
	if err != nil || !b.tls || b.addr != "venue:5212" || b.targetCompID != "cServer" || b.pollPositions != 2*time.Second {
		t.Fatalf("%+v, %v", b, err)
	}
	if c := b.fixConfig(zerolog.Nop()); c.PollPositions != 2*time.Second || c.TargetSubID != "TRADE" {
		t.Fatalf("config %+v", c)
	}
	for spec, want := range map[string]string{
		"fix://venue:1?poll-positions=fast":  "poll-positions must be a duration",
		"fix://venue:1?poll-positions=10ms":  "at least 100ms",
		"fix://venue:1?colour=red":           `unknown parameter "colour"`,
		"bridge://venue:1?poll-positions=1s": "unexpected path or query",
	} {
		if _, err := parseBrokerSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}
