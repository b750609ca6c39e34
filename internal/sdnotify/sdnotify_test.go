package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listen opens a notify socket the way systemd does and returns its path.
func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func TestSendReachesTheSocket(t *testing.T) {
	c, path := listen(t)
	n, err := Open(Env{Socket: path, WatchdogUSec: "90000000"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Watchdog() != 90*time.Second {
		t.Fatalf("watchdog %v, want 90s", n.Watchdog())
	}
	if err := n.Send("READY=1", "STATUS=up"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	k, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:k]); got != "READY=1\nSTATUS=up\n" {
		t.Fatalf("datagram %q", got)
	}
	for _, bad := range []string{"READY", "STATUS=a\nb"} {
		if err := n.Send(bad); err == nil {
			t.Errorf("Send(%q) accepted", bad)
		}
	}
}

func TestNoSocketSendsNothing(t *testing.T) {
	n, err := Open(Env{})
	if err != nil || n != nil {
		t.Fatalf("Open without a socket: %v %v", n, err)
	}
	if err := n.Send("READY=1"); err != nil || n.Watchdog() != 0 || n.Close() != nil {
		t.Fatal("a nil Notifier must do nothing")
	}
}

func TestEnvErrors(t *testing.T) {
	pid := os.Getpid()
	for _, e := range []Env{
		{Socket: "relative/path"},
		{Socket: "/nonexistent/dir/notify"},
		{WatchdogUSec: "soon"},
		{WatchdogUSec: "0"},
		{WatchdogUSec: "-5"},
		{WatchdogUSec: "1000", WatchdogPID: "me"},
	} {
		if _, err := Open(e); err == nil {
			t.Errorf("Open(%+v) accepted", e)
		} else if !strings.Contains(err.Error(), "NOTIFY_SOCKET") && !strings.Contains(err.Error(), "WATCHDOG_") {
			t.Errorf("Open(%+v): %v does not name the variable", e, err)
		}
	}
	// A watchdog meant for another process is not ours to feed.
	if wd, err := (Env{WatchdogUSec: "1000", WatchdogPID: "1"}).Watchdog(pid + 1); err != nil || wd != 0 {
		t.Fatalf("another process's watchdog: %v %v", wd, err)
	}
	if wd, err := (Env{WatchdogUSec: "1500000", WatchdogPID: "7"}).Watchdog(7); err != nil || wd != 1500*time.Millisecond {
		t.Fatalf("own watchdog: %v %v", wd, err)
	}
}
