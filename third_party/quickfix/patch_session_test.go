package quickfix

// Tests of the patched session run loop (PATCHES.md): a logon is served at once, not on
// the next round second.

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix/config"
)

// logonApp signals each logon; everything else is accepted as is.
type logonApp struct{ logons chan SessionID }

func (a logonApp) OnCreate(SessionID)                               {}
func (a logonApp) OnLogon(id SessionID)                             { a.logons <- id }
func (a logonApp) OnLogout(SessionID)                               {}
func (a logonApp) ToAdmin(*Message, SessionID)                      {}
func (a logonApp) ToApp(*Message, SessionID) error                  { return nil }
func (a logonApp) FromAdmin(*Message, SessionID) MessageRejectError { return nil }
func (a logonApp) FromApp(*Message, SessionID) MessageRejectError   { return nil }

func sessionSettings(sender, target string, set map[string]string) *Settings {
	s := NewSettings()
	ss := NewSessionSettings()
	ss.Set(config.BeginString, BeginStringFIX44)
	ss.Set(config.SenderCompID, sender)
	ss.Set(config.TargetCompID, target)
	ss.Set(config.HeartBtInt, "30")
	for k, v := range set {
		ss.Set(k, v)
	}
	if _, err := s.AddSession(ss); err != nil {
		panic(err)
	}
	return s
}

// v0.9.7 slept until the next round second before a session's run loop served anything,
// so each logon (initiator and acceptor side) waited up to a second: 1,000 FIX accounts
// connected 64 at a time took 32 s. With the first tick pushed an hour away, a logon must
// still complete: the loop no longer waits for the tick.
func TestLogonDoesNotWaitForTheFirstTick(t *testing.T) {
	defer func(d func(time.Time) time.Duration) { firstTickDelay = d }(firstTickDelay)
	firstTickDelay = func(time.Time) time.Duration { return time.Hour }

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()

	accepted := logonApp{logons: make(chan SessionID, 1)}
	a, err := NewAcceptor(accepted, NewMemoryStoreFactory(), sessionSettings("venue", "node", map[string]string{
		config.SocketAcceptHost: "127.0.0.1", config.SocketAcceptPort: port}), NewNullLogFactory())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()

	initiated := logonApp{logons: make(chan SessionID, 1)}
	i, err := NewInitiator(initiated, NewMemoryStoreFactory(), sessionSettings("node", "venue", map[string]string{
		config.SocketConnectHost: "127.0.0.1", config.SocketConnectPort: port, config.ReconnectInterval: "1"}), NewNullLogFactory())
	if err != nil {
		t.Fatal(err)
	}
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	defer i.Stop()

	for _, side := range []struct {
		name   string
		logons chan SessionID
	}{{"acceptor", accepted.logons}, {"initiator", initiated.logons}} {
		select {
		case <-side.logons:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no logon within 30 s (the run loop waits for its first tick)", side.name)
		}
	}
}
