package stress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snapcopier/copier/internal/cputime"
)

// nodeState is where a node process is in its life.
type nodeState int8

const (
	nodeRunning nodeState = iota + 1
	nodeFrozen
	nodeKilled   // SIGKILL by the fault schedule
	nodeStopping // SIGTERM at the end of the run
	nodeExited   // ended by itself
)

// nodeProc is one `copierd run` process.
type nodeProc struct {
	id       string
	cmd      *exec.Cmd
	pid      int
	httpAddr string
	proxy    *dbProxy
	logPath  string
	started  time.Time
	done     chan struct{} // closed when the process has been reaped

	mu      sync.Mutex
	state   nodeState
	ended   time.Time
	exitErr error
	stats   nodeStats
}

// nodeStats is what the run learned about a node's resource use.
type nodeStats struct {
	maxRSSKB      int64
	lastRSSKB     int64
	cpuTicks      int64 // utime + stime at the last sample
	threads       int64
	goroutines    int64 // -1: not exposed
	maxOwned      int64
	lastOwned     int64
	copying       int64 // accounts in phase copying at the last scrape
	droppedWork   int64
	staleRefused  int64
	ordersOK      int64
	ordersFailed  int64
	ordersFenced  int64
	cycleFailures int64
	leasesLost    int64
	handOffs      int64            // copier_lease_handoffs_total
	skips         map[string]int64 // copier_skips_total by reason, the reasons above 0
	memory        []memSample      // one per scrape that answered
}

// scrape is one parse of a node's /metrics.
type scrape struct {
	values map[string]float64 // "name" or "name{label=value}" (first label only) → value
}

// startNode starts one node process. args are the flags after "run" (with --http
// 127.0.0.1:0); env its environment additions (secrets go there, not on the command
// line). It returns once the node has written the address its HTTP endpoint listens on
// (--http-addr-file: whatever the node's log level, nothing is read from its log).
func startNode(copierd, id, logDir string, args []string, env []string, proxy *dbProxy) (*nodeProc, error) {
	logPath := filepath.Join(logDir, id+".log")
	addrPath := filepath.Join(logDir, id+".addr")
	_ = os.Remove(addrPath)
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node %s log: %w", id, err)
	}
	cmd := exec.Command(copierd, append(append([]string{"run"}, args...), "--http-addr-file", addrPath)...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Its own process group: a terminal's Ctrl-C does not reach it, and signals go to
	// this process only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start node %s: %w", id, err)
	}
	n := &nodeProc{id: id, cmd: cmd, pid: cmd.Process.Pid, proxy: proxy, logPath: logPath,
		started: time.Now(), done: make(chan struct{}), state: nodeRunning}
	n.stats.goroutines = -1
	go func() {
		err := cmd.Wait()
		lf.Close()
		n.mu.Lock()
		n.exitErr, n.ended = err, time.Now()
		if n.state == nodeRunning || n.state == nodeFrozen {
			n.state = nodeExited
		}
		n.mu.Unlock()
		close(n.done)
	}()
	addr, err := waitHTTPAddr(addrPath, logPath, n.done, 30*time.Second)
	if err != nil {
		_ = n.signal(syscall.SIGKILL)
		<-n.done
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	n.httpAddr = addr
	return n, nil
}

// waitHTTPAddr waits for the node to write its HTTP address to addrPath (the node
// writes it whole, by a rename).
func waitHTTPAddr(addrPath, logPath string, done <-chan struct{}, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		if b, err := os.ReadFile(addrPath); err == nil {
			if addr := strings.TrimSpace(string(b)); addr != "" {
				return addr, nil
			}
		}
		select {
		case <-done:
			return "", fmt.Errorf("exited before serving HTTP (see %s)", logPath)
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no HTTP address written to %s within %v (see %s)", addrPath, within, logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanEnv is the environment without COPIER_ variables, so that nothing the caller set
// changes a node's flags behind the run's back.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COPIER_") {
			out = append(out, kv)
		}
	}
	return out
}

// getState returns the node's state.
func (n *nodeProc) getState() nodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// alive reports whether the process has not been reaped yet.
func (n *nodeProc) alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process unless it has been reaped.
func (n *nodeProc) signal(sig syscall.Signal) error {
	if !n.alive() {
		return errors.New("process has ended")
	}
	return syscall.Kill(n.pid, sig)
}

// kill sends SIGKILL (a crash).
func (n *nodeProc) kill() error {
	n.mu.Lock()
	n.state = nodeKilled
	n.mu.Unlock()
	return n.signal(syscall.SIGKILL)
}

// freeze sends SIGSTOP.
func (n *nodeProc) freeze() error {
	n.mu.Lock()
	if n.state != nodeRunning {
		n.mu.Unlock()
		return errors.New("node is not running")
	}
	n.state = nodeFrozen
	n.mu.Unlock()
	return n.signal(syscall.SIGSTOP)
}

// thaw sends SIGCONT.
func (n *nodeProc) thaw() error {
	n.mu.Lock()
	if n.state == nodeFrozen {
		n.state = nodeRunning
	}
	n.mu.Unlock()
	return n.signal(syscall.SIGCONT)
}

// stop shuts the node down cleanly (SIGTERM), or kills it after grace. It returns the
// process's exit error (nil for exit status 0).
func (n *nodeProc) stop(grace time.Duration) error {
	n.mu.Lock()
	wasFrozen := n.state == nodeFrozen
	if n.state == nodeRunning || n.state == nodeFrozen {
		n.state = nodeStopping
	}
	n.mu.Unlock()
	if wasFrozen {
		_ = n.signal(syscall.SIGCONT)
	}
	_ = n.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-n.done:
	case <-t.C:
		_ = n.signal(syscall.SIGKILL)
		<-n.done
		return fmt.Errorf("did not stop within %v; killed", grace)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitErr
}

// sampleProc reads RSS, threads and CPU ticks from /proc.
func (n *nodeProc) sampleProc() {
	if !n.alive() {
		return
	}
	rss, threads := readStatus(n.pid)
	ticks := readCPUTicks(n.pid)
	n.mu.Lock()
	defer n.mu.Unlock()
	if rss > 0 {
		n.stats.lastRSSKB = rss
		n.stats.maxRSSKB = max(n.stats.maxRSSKB, rss)
	}
	if threads > 0 {
		n.stats.threads = threads
	}
	if ticks > 0 {
		n.stats.cpuTicks = ticks
	}
}

// readStatus returns VmRSS (kB) and Threads from /proc/PID/status.
func readStatus(pid int) (rssKB, threads int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			rssKB, _ = strconv.ParseInt(fields[1], 10, 64)
		case "Threads:":
			threads, _ = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return rssKB, threads
}

// procStat returns the fields of /proc/PID/stat after the command name (nil when it
// cannot be read): state is index 0, ppid 1, utime 11, stime 12. The command name is in
// parentheses and may hold spaces, so the fields start after the last ')'.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// readCPUTicks returns utime + stime (clock ticks) from /proc/PID/stat; 0 when it cannot
// be read.
func readCPUTicks(pid int) int64 {
	d, err := cputime.Of(pid)
	if err != nil {
		return 0
	}
	return int64(d / (time.Second / clockTicks))
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// scrapeMetrics reads the node's /metrics (short timeout: a frozen node never answers).
func (n *nodeProc) scrapeMetrics(ctx context.Context, client *http.Client) {
	if n.getState() != nodeRunning {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.httpAddr+"/metrics", nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return
	}
	sc := parseMetrics(resp.Body)
	n.mu.Lock()
	defer n.mu.Unlock()
	st := &n.stats
	if v, ok := sc.values["copier_owned_accounts"]; ok {
		st.lastOwned = int64(v)
		st.maxOwned = max(st.maxOwned, int64(v))
	}
	st.copying = int64(sc.values[`copier_accounts{phase="copying"}`])
	st.droppedWork = int64(sc.values["copier_dropped_work_total"])
	st.staleRefused = int64(sc.values["copier_stale_writes_refused_total"])
	st.ordersOK = int64(sc.values[`copier_orders_total{result="ok"}`])
	st.ordersFenced = int64(sc.values[`copier_orders_total{result="fenced"}`])
	st.ordersFailed = 0
	for _, r := range []string{"retryable", "unknown_outcome", "permanent", "fenced", "other"} {
		st.ordersFailed += int64(sc.values[`copier_orders_total{result="`+r+`"}`])
	}
	st.cycleFailures = int64(sc.values["copier_lease_cycle_failures_total"])
	st.leasesLost = int64(sc.values["copier_lease_lost_total"])
	st.handOffs = int64(sc.values["copier_lease_handoffs_total"])
	st.skips = sc.skips()
	if v, ok := sc.values["go_goroutines"]; ok {
		st.goroutines = int64(v)
	}
	heap, ok := sc.values["go_memstats_heap_inuse_bytes"]
	if !ok {
		heap = -1
	}
	st.memory = append(st.memory, memSample{at: time.Now(), rssKB: st.lastRSSKB, heapBytes: heap})
}

// parseMetrics reads the Prometheus text format, keeping each sample under its name plus
// its labels other than node (in their order).
func parseMetrics(r io.Reader) scrape {
	sc := scrape{values: map[string]float64{}}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		key := line[:sp]
		if i := strings.IndexByte(key, '{'); i >= 0 && strings.HasSuffix(key, "}") {
			name := key[:i]
			var kept []string
			for _, l := range strings.Split(key[i+1:len(key)-1], ",") {
				if l != "" && !strings.HasPrefix(l, "node=") {
					kept = append(kept, l)
				}
			}
			key = name
			if len(kept) > 0 {
				key += "{" + strings.Join(kept, ",") + "}"
			}
		}
		sc.values[key] += v
	}
	return sc
}

// skips reads copier_skips_total: the reasons above 0 and their counts (nil when none).
func (sc scrape) skips() map[string]int64 {
	var out map[string]int64
	for k, v := range sc.values {
		if reason, ok := strings.CutPrefix(k, `copier_skips_total{reason="`); ok && v > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[strings.TrimSuffix(reason, `"}`)] = int64(v)
		}
	}
	return out
}

// withHost returns the PostgreSQL URL u pointing at addr instead of its own host:port.
func withHost(u, addr string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		return "", errors.New("the database URL must be a postgres:// URL")
	}
	p.Host = addr
	return p.String(), nil
}
