// Package sdnotify speaks systemd's service notification protocol (sd_notify(3)): it
// sends READY=1, WATCHDOG=1, STATUS= and STOPPING=1 datagrams to the socket systemd names
// in $NOTIFY_SOCKET, and reads the watchdog interval systemd asks for from $WATCHDOG_USEC.
// Outside systemd (no $NOTIFY_SOCKET) every call does nothing.
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// writeTimeout bounds one datagram: a notification must never hold up its caller (the
// node's lease cycle), and systemd reads its socket at once.
const writeTimeout = time.Second

// Notifier sends notifications to one socket. The zero value and nil send nothing.
type Notifier struct {
	conn *net.UnixConn
	// watchdog is the interval systemd expects WATCHDOG=1 within (0: no watchdog).
	watchdog time.Duration
}

// Env are the variables systemd sets for a Type=notify service.
type Env struct {
	Socket       string // NOTIFY_SOCKET: a path, or "@name" for the abstract namespace
	WatchdogUSec string // WATCHDOG_USEC
	WatchdogPID  string // WATCHDOG_PID: the process the watchdog is meant for
}

// FromOS reads Env from the process environment.
func FromOS() Env {
	return Env{Socket: os.Getenv("NOTIFY_SOCKET"), WatchdogUSec: os.Getenv("WATCHDOG_USEC"), WatchdogPID: os.Getenv("WATCHDOG_PID")}
}

// Watchdog parses the watchdog interval of e for the process pid: 0 when systemd asked for
// none or asked it of another process.
func (e Env) Watchdog(pid int) (time.Duration, error) {
	if e.WatchdogUSec == "" {
		return 0, nil
	}
	if e.WatchdogPID != "" {
		p, err := strconv.Atoi(e.WatchdogPID)
		if err != nil {
			return 0, fmt.Errorf("WATCHDOG_PID=%q: not a process id", e.WatchdogPID)
		}
		if p != pid {
			return 0, nil
		}
	}
	us, err := strconv.ParseInt(e.WatchdogUSec, 10, 64)
	if err != nil || us <= 0 {
		return 0, fmt.Errorf("WATCHDOG_USEC=%q: want a positive number of microseconds", e.WatchdogUSec)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Open connects to the socket of e. It returns nil (sending nothing) when e names none.
func Open(e Env) (*Notifier, error) {
	wd, err := e.Watchdog(os.Getpid())
	if err != nil {
		return nil, err
	}
	if e.Socket == "" {
		return nil, nil
	}
	name := e.Socket
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") {
		return nil, fmt.Errorf("NOTIFY_SOCKET=%q: want an absolute path or @name (vsock is not supported)", e.Socket)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return &Notifier{conn: conn, watchdog: wd}, nil
}

// Watchdog is the interval systemd expects WATCHDOG=1 within; 0 when there is no watchdog.
func (n *Notifier) Watchdog() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Send sends one notification of the given assignments ("READY=1", "STATUS=…").
func (n *Notifier) Send(assignments ...string) error {
	if n == nil || n.conn == nil {
		return nil
	}
	for _, a := range assignments {
		if !strings.Contains(a, "=") || strings.Contains(a, "\n") {
			return fmt.Errorf("sdnotify: %q is not one KEY=VALUE line", a)
		}
	}
	if err := n.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := n.conn.Write([]byte(strings.Join(assignments, "\n") + "\n"))
	return err
}

// Close closes the socket.
func (n *Notifier) Close() error {
	if n == nil || n.conn == nil {
		return nil
	}
	return n.conn.Close()
}
