package main

import (
	"os"
	"path/filepath"
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
		"fix://venue:1?poll-positions=fast":                 "poll-positions must be a duration",
		"fix://venue:1?poll-positions=10ms":                 "at least 100ms",
		"fix://venue:1?colour=red":                          `unknown parameter "colour"`,
		"bridge://venue:1?poll-positions=1s":                "unexpected path or query",
		"fix://venue:1?dialect=fix42":                       `FIX dialect "fix42"`,
		"fix://venue:1?symbols=/nonexistent":                "symbols",
		"fix://venue:1?position-mode=sideways":              "netting or hedging",
		"fix://venue:1?dialect=fix44&position-mode=hedging": "hedging cannot be served by the fix44 dialect",
	} {
		if _, err := parseBrokerSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestParseBrokerSpecFIXDialect: ?dialect= sets the node's FIX dialect and ?symbols= reads
// the venue's symbol list from a JSON file, checked when the flag is parsed.
func TestParseBrokerSpecFIXDialect(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"name":"EURUSD","id":"1","contract_size":100000,"digits":5,"min_lot":0.01,"lot_step":0.01,"max_lot":50}]`)
	b, err := parseBrokerSpec("fix://venue:1?dialect=fix44&symbols=" + good)
	if err != nil {
		t.Fatal(err)
	}
	c := b.fixConfig(zerolog.Nop())
	if c.Dialect != "fix44" || len(c.Symbols) != 1 || c.Symbols[0].ID != "1" || c.Symbols[0].ContractSize != 100000 || c.Symbols[0].MaxLot != 50 {
		t.Fatalf("config %+v", c)
	}
	for body, want := range map[string]string{
		`[{"name":"EURUSD","contract_size":0,"min_lot":0.01,"lot_step":0.01}]`:                "contract size",
		`[{"name":"EURUSD","contract_size":1,"min_lot":0.01,"lot_step":0.01,"colour":"red"}]`: `unknown field "colour"`,
		`{"name":"EURUSD"}`: "cannot unmarshal",
	} {
		p := write("bad.json", body)
		if _, err := parseBrokerSpec("fix://venue:1?symbols=" + p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
