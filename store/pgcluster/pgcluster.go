// Package pgcluster starts and stops a throwaway PostgreSQL cluster from the machine's own
// PostgreSQL binaries: initdb into a private temporary directory, listen on a free loopback
// port and a private socket directory, and remove everything on Stop. The test harness
// (store/storetest), the demo and the stress tool use it; production nodes never do.
//
// PostgreSQL refuses to run as root, so when the process is root the binaries run as the
// "postgres" user (or COPIER_PG_USER) and the data directory is owned by that user.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options tune a cluster. The zero value is a sensible default.
type Options struct {
	// BinDir holds initdb, pg_ctl and postgres. Empty: COPIER_PG_BINDIR, then
	// `pg_config --bindir`, then the newest /usr/lib/postgresql/*/bin.
	BinDir string
	// Port to listen on 127.0.0.1; 0 picks a free one.
	Port int
	// Settings are extra server settings (name → value), e.g. "max_connections": "300".
	Settings map[string]string
	// KeepData leaves the data directory in place on Stop (for post-mortems).
	KeepData bool
	// Preload names shared libraries (shared_preload_libraries) to load when the server
	// has them (NAME.so in the lib directory beside its binaries); one it lacks is left
	// out, and Preloaded says so.
	Preload []string
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	binDir  string
	dir     string // temporary root: data/, sock/, log
	dataDir string
	sockDir string
	port    int
	cred    *syscall.Credential
	opts    Options
	// watchdog stops the server if this process dies without calling Stop (a test binary
	// killed by its timeout, a demo killed with SIGKILL); pg_ctl detaches the server, so
	// nothing else would.
	watchdog *exec.Cmd
	// preloaded are the Options.Preload libraries the server has.
	preloaded []string
}

// Superuser is the cluster's superuser; authentication is "trust" on loopback only.
const Superuser = "postgres"

// Start initialises and starts a new cluster. On error nothing is left behind.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := runAsCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "copier-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: temp dir: %w", err)
	}
	c := &Cluster{binDir: binDir, dir: dir, dataDir: filepath.Join(dir, "data"), sockDir: filepath.Join(dir, "sock"), cred: cred, opts: opts}
	if err := c.init(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port := opts.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	c.port = port
	if err := c.start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.startWatchdog(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// watchdogScript polls once a second that this process ($1) is alive and the cluster's
// data directory ($3) still exists; when the process is gone it stops the server ($2 =
// pg_ctl) and removes the cluster's files ($4, when not kept). /proc is read rather than
// kill -0, which fails across users when the server runs as the postgres user.
const watchdogScript = `while [ -d "/proc/$1" ] && [ -d "$3" ]; do sleep 1; done
[ -d "$3" ] || exit 0
"$2" -D "$3" -m immediate -w -t 30 stop
[ -n "$4" ] && rm -rf "$4"`

func (c *Cluster) startWatchdog() error {
	remove := c.dir
	if c.opts.KeepData {
		remove = ""
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "copier-pg-watchdog",
		strconv.Itoa(os.Getpid()), filepath.Join(c.binDir, "pg_ctl"), c.dataDir, remove)
	cmd.Dir = c.dir
	// Its own process group: a terminal's Ctrl-C must not stop it before it has stopped
	// the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgcluster: watchdog: %w", err)
	}
	c.watchdog = cmd
	return nil
}

func (c *Cluster) init(ctx context.Context) error {
	for _, d := range []string{c.dataDir, c.sockDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
	}
	if c.cred != nil {
		for _, d := range []string{c.dir, c.dataDir, c.sockDir} {
			if err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return fmt.Errorf("pgcluster: chown %s: %w", d, err)
			}
		}
	}
	_, err := c.run(ctx, "initdb", "-D", c.dataDir, "-U", Superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	return err
}

func (c *Cluster) start(ctx context.Context) error {
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(c.port),
		"unix_socket_directories": c.sockDir,
		"fsync":                   "off", // throwaway data: durability buys nothing here
		"synchronous_commit":      "off",
		"full_page_writes":        "off",
		"max_connections":         "300",
		"shared_buffers":          "128MB",
	}
	c.preloaded = nil
	for _, lib := range c.opts.Preload {
		if _, err := os.Stat(filepath.Join(c.binDir, "..", "lib", lib+".so")); err == nil {
			c.preloaded = append(c.preloaded, lib)
		}
	}
	if len(c.preloaded) > 0 {
		settings["shared_preload_libraries"] = strings.Join(c.preloaded, ",")
	}
	for k, v := range c.opts.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var o strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&o, "-c %s=%s ", k, settings[k])
	}
	_, err := c.run(ctx, "pg_ctl", "-D", c.dataDir, "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", o.String(), "start")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, c.logTail())
	}
	return nil
}

// Stop stops the server (fast shutdown) and removes its files unless KeepData is set.
func (c *Cluster) Stop() error {
	if w := c.watchdog; w != nil {
		_ = w.Process.Kill()
		_ = w.Wait()
		c.watchdog = nil
	}
	_, err := c.run(context.Background(), "pg_ctl", "-D", c.dataDir, "-m", "immediate", "-w", "-t", "30", "stop")
	if !c.opts.KeepData {
		if rmErr := os.RemoveAll(c.dir); err == nil {
			err = rmErr
		}
	}
	return err
}

// Restart stops the server abruptly (as a crash would) and starts it again on the same
// port: connections drop, data survives.
func (c *Cluster) Restart(ctx context.Context) error {
	if _, err := c.run(ctx, "pg_ctl", "-D", c.dataDir, "-m", "immediate", "-w", "-t", "30", "stop"); err != nil {
		return err
	}
	return c.start(ctx)
}

// Preloaded reports whether the server loaded library lib (Options.Preload).
func (c *Cluster) Preloaded(lib string) bool { return slices.Contains(c.preloaded, lib) }

// Port is the TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Addr is "127.0.0.1:port".
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// Dir is the cluster's temporary root directory (data, socket, server.log).
func (c *Cluster) Dir() string { return c.dir }

// DataDir is the cluster's data directory (its postmaster.pid names the server process).
func (c *Cluster) DataDir() string { return c.dataDir }

// URL returns a connection URL for database dbname as the superuser over TCP.
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", Superuser, c.Addr(), dbname)
}

func (c *Cluster) logTail() string {
	b, err := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "server.log: " + string(b)
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// pg_ctl start leaves the server running with our stdout open; do not wait on it.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("pgcluster: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// findBinDir locates the PostgreSQL server binaries.
func findBinDir(explicit string) (string, error) {
	candidates := []string{explicit, os.Getenv("COPIER_PG_BINDIR")}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	globbed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(globbed, func(i, j int) bool { return versionOf(globbed[i]) > versionOf(globbed[j]) })
	candidates = append(candidates, globbed...)
	for _, d := range candidates {
		if d == "" {
			continue
		}
		if fileExists(filepath.Join(d, "initdb")) && fileExists(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("pgcluster: no PostgreSQL server binaries found (initdb, pg_ctl): " +
		"install them (Debian: apt-get install -y postgresql) or set COPIER_PG_BINDIR, " +
		"or point tests at a running server with COPIER_TEST_DATABASE_URL")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// runAsCredential returns the credential to run PostgreSQL binaries with: nil when not
// root, else the postgres (or COPIER_PG_USER) user.
func runAsCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("COPIER_PG_USER")
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root and PostgreSQL refuses root; user %q not found (create it or set COPIER_PG_USER): %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
