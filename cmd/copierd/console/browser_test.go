package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// EnvScreenshotDir, when set, receives accounts.png and cluster.png from the browser test
// (for the documentation).
const EnvScreenshotDir = "COPIER_SCREENSHOT_DIR"

// EnvChromium overrides where the browser test looks for Chromium.
const EnvChromium = "COPIER_CHROMIUM"

// findChromium returns the Chromium binary, or fails the test saying how to install it.
// The browser test is never skipped.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v (unset it to use /usr/bin/chromium; Debian/Ubuntu: apt-get install -y chromium)", EnvChromium, p, err)
		}
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("the browser test needs headless Chromium and found none at /usr/bin/chromium or on PATH.\n" +
		"Install it (Debian/Ubuntu: apt-get install -y chromium) or set " + EnvChromium + " to a Chromium or Chrome binary.")
	return ""
}

// browser is one headless Chromium tab driven by chromedp, with screenshots of every page
// it visited saved when the test fails.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu      sync.Mutex
	shots   []namedShot
	console []string // JavaScript exceptions and security (CSP) errors
}

type namedShot struct {
	name string
	png  []byte
}

func newBrowser(t *testing.T, chromium, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], // headless, no first run, no background networking, no sync
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()), // a fresh profile
		chromedp.WindowSize(1440, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(string, ...any) {}), chromedp.WithLogf(func(string, ...any) {}))
	b := &browser{t: t, ctx: ctx, base: base}
	// Cleanups run last-registered first: save the screenshots, then stop the browser
	// (which waits for the process), then the profile directory is removed.
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	t.Cleanup(b.saveOnFailure)
	// The first action starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("cannot start Chromium (%s): %v", chromium, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "security") {
				b.mu.Lock()
				b.console = append(b.console, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs steps with a deadline; on failure it takes a screenshot and fails the test.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + what)
		b.t.Fatalf("browser: %s: %v (at %s)", what, err, b.location())
	}
}

// poll waits until the JavaScript expression is true. It evaluates the expression every
// 100 ms and rides over navigations (a form submit replaces the page it evaluates in).
func (b *browser) poll(what, expr string, within time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "false"
		}
		if time.Now().After(deadline) {
			b.shot("failed-" + what)
			b.t.Fatalf("browser: %s: not within %v (last: %s, at %s)", what, within, last, b.location())
		}
		<-tick.C
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.shot("failed-text")
		b.t.Fatalf("browser: text of %s: %v", sel, err)
	}
	return s
}

func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown location: " + err.Error()
	}
	return loc
}

// shot keeps a screenshot of the page (written out only on failure).
func (b *browser) shot(name string) []byte {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return nil
	}
	b.mu.Lock()
	b.shots = append(b.shots, namedShot{name, png})
	b.mu.Unlock()
	return png
}

func (b *browser) saveOnFailure() {
	if !b.t.Failed() {
		return
	}
	b.shot("at-failure")
	dir := b.t.ArtifactDir() // a temporary directory, kept with go test -artifacts
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.shots {
		p := filepath.Join(dir, fmt.Sprintf("%02d-%s.png", i, strings.NewReplacer(" ", "-", "/", "_").Replace(s.name)))
		if err := os.WriteFile(p, s.png, 0o644); err != nil {
			b.t.Logf("write %s: %v", p, err)
			continue
		}
		b.t.Logf("screenshot: %s", p)
	}
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// TestBrowserDrivesTheEngine runs a small copier in the test process — a database, the
// simulated trade server, two nodes — and drives the console with headless Chromium:
// log in, watch the accounts table fill with owners, create an account (with a broker
// password that only sealing and unsealing get right) and a link in the forms, see the
// link copy the next master trade, and disable an account so that its owner lets it go.
func TestBrowserDrivesTheEngine(t *testing.T) {
	chromium := findChromium(t)
	db := storetest.NewDB(t)
	srv := newSim()
	sealer := newSealer(t)
	ctx := ctxT(t)
	const brokerPassword = "broker-pw-102"
	must(t, srv.Provision(ctx, broker.AccountSpec{Login: "f102", Password: brokerPassword, Balance: 50_000}))
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: 1, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m1"}))
	for _, id := range []int64{101, 103, 104} {
		must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: fmt.Sprintf("f%d", id)}))
		_, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: id, Enabled: true, Magic: 7000 + id})
		must(t, err)
	}
	// Two nodes of capacity 2 share the four followers (102 is created in the browser).
	nodeA := startNode(t, db, srv, sealer, "node-a", 2)
	startNode(t, db, srv, sealer, "node-b", 2)
	e := newEnvWith(t, db, withNode(nodeA), withControl(srv), func(o *console.Options) { o.Sealer = sealer })
	b := newBrowser(t, chromium, e.srv.URL)
	base := e.srv.URL

	// Log in with the token; the accounts table fills in as the nodes claim.
	b.do("log in",
		chromedp.Navigate(base+"/accounts"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("accounts")),
	)
	b.poll("account 101 shows its owner", `(() => {
		const c = document.querySelector('#accounts tr[data-id="101"] td.owner');
		return !!c && /node-[ab]/.test(c.textContent);
	})()`, 20*time.Second)
	b.shot("accounts")
	owner := strings.Fields(b.text(`#accounts tr[data-id="101"] td.owner`))[0]
	if db := e.account(101); db.NodeID != owner {
		t.Fatalf("the page says %s owns 101, the database says %q", owner, db.NodeID)
	}

	// Create follower 102 with its broker password.
	b.do("open the account form", chromedp.Navigate(base+"/accounts/new"), chromedp.WaitVisible(chromedp.ID("account-form")))
	b.shot("account-form")
	b.do("create account 102",
		chromedp.SendKeys(chromedp.ID("id"), "102"),
		chromedp.SetValue(chromedp.ID("role"), "follower"),
		chromedp.SendKeys(chromedp.ID("platform"), "sim"),
		chromedp.SendKeys(chromedp.ID("login"), "f102"),
		// FIX session settings go with it (the simulator ignores them).
		chromedp.SendKeys(chromedp.ID("fix_sender_comp_id"), "demo.sim.f102"),
		chromedp.SendKeys(chromedp.ID("fix_username"), "f102"),
		chromedp.SendKeys(chromedp.ID("password"), brokerPassword),
		chromedp.Click(chromedp.ID("save")),
	)
	b.poll("account 102's page", `location.pathname === "/accounts/102" && !!document.querySelector("#summary")`, 10*time.Second)
	b.shot("account-102")
	if got, err := sealer.Open(e.credentials(102)); err != nil || got != brokerPassword {
		t.Fatalf("the form did not store the sealed password: %v", err)
	}
	if fix := e.account(102).FIX; !reflect.DeepEqual(fix, store.FIXSession{SenderCompID: "demo.sim.f102", Username: "f102"}) {
		t.Fatalf("the form stored the FIX settings %+v", fix)
	}
	if got := b.text("#fix-session"); !strings.Contains(got, "SenderCompID demo.sim.f102") || !strings.Contains(got, "user f102") {
		t.Fatalf("account 102's page shows the FIX settings as %q", got)
	}

	// A link with invalid settings is refused next to the field; the corrected one is saved.
	b.do("open the link form", chromedp.Navigate(base+"/links/new?follower=102"), chromedp.WaitVisible(chromedp.ID("link-form")))
	b.do("submit invalid settings",
		chromedp.SendKeys(chromedp.ID("master_id"), "1"),
		chromedp.SendKeys(chromedp.ID("magic"), "7102"),
		chromedp.SetValue(chromedp.ID("settings"), `{"sizing": {"multiplier": 0}}`),
		chromedp.Click(chromedp.ID("save")),
		chromedp.WaitVisible(chromedp.ID("settings-errors")),
	)
	b.shot("link-form-error")
	if msg := b.text("#settings-errors"); !strings.Contains(msg, "sizing.multiplier") {
		t.Fatalf("settings error does not name the field: %q", msg)
	}
	var links102 int
	must(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM copy_links WHERE follower_id = 102`).Scan(&links102))
	if links102 != 0 {
		t.Fatalf("a refused link was written: %d links", links102)
	}
	b.do("submit valid settings",
		chromedp.SetValue(chromedp.ID("settings"), `{"sizing": {"mode": "lot_multiplier", "multiplier": 2}}`),
		chromedp.Click(chromedp.ID("save")),
	)
	b.poll("the link shows on account 102", `location.pathname === "/accounts/102" && !!document.querySelector('#links tr[id^="link-"]')`, 10*time.Second)

	// The next master trade is copied through the new link, at twice the volume.
	eventually(t, "follower 102 is copying", 20*time.Second, func() (bool, string) {
		a := e.account(102)
		return a.NodeID != "" && a.Status == "copying", fmt.Sprintf("owner %q status %q error %q", a.NodeID, a.Status, a.LastError)
	})
	pos, err := srv.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.2})
	must(t, err)
	eventually(t, "the master trade is copied to follower 102", 20*time.Second, func() (bool, string) {
		ps, err := srv.AccountPositions(ctx, "f102")
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.Magic == 7102 && p.Symbol == "EURUSD" && p.Volume == 0.4 && strings.Contains(p.Comment, fmt.Sprint(pos.Ticket)) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("follower positions %+v", ps)
	})
	b.poll("the positions view pairs the copy", `!!document.querySelector('#positions table.pairs tr.state-copied')`, 10*time.Second)
	b.shot("account-102-copied")

	// Follower 103 gets a 100 USD drawdown limit from its page; the master's position loses
	// 100 pips (200 USD on the 0.2-lot copy): 103 is stopped out, its page shows it, and the
	// page's reset button (a form with the CSRF token) resumes it.
	b.do("set 103's drawdown limit",
		chromedp.Navigate(base+"/accounts/103"),
		chromedp.WaitVisible(chromedp.ID("protection-form")),
		chromedp.SetValue(chromedp.ID("limits"), `{"max_drawdown": {"amount": 100}}`),
		chromedp.Click(chromedp.CSS(`#protection-form button[data-action="save-protection"]`)),
	)
	b.poll("the limit saved", `location.search.includes("done=protections")`, 10*time.Second)
	eventually(t, "follower 103 holds its copy under the limit", 20*time.Second, func() (bool, string) {
		var n int
		must(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM protection_state WHERE follower_id = 103`).Scan(&n))
		ps, err := srv.AccountPositions(ctx, "f103")
		return err == nil && n == 1 && len(ps) == 1, fmt.Sprintf("%d states, positions %+v %v", n, ps, err)
	})
	srv.SetPrice("EURUSD", pos.OpenPrice-0.0100)
	eventually(t, "follower 103 stopped out", 30*time.Second, func() (bool, string) {
		var stopped bool
		must(t, db.Pool.QueryRow(ctx, `SELECT state ? 'stop' FROM protection_state WHERE follower_id = 103 AND link_id = 0`).Scan(&stopped))
		return stopped, "no stop-out stored"
	})
	b.do("103's page shows the stop-out",
		chromedp.Navigate(base+"/accounts/103"),
		chromedp.WaitVisible(chromedp.ID("stopout-badge-0")),
	)
	b.shot("account-103-stopped-out")
	if msg := b.text("#stopout-0"); !strings.Contains(msg, "max_drawdown") {
		t.Fatalf("the stop-out does not say why: %q", msg)
	}
	b.do("reset 103", chromedp.Click(chromedp.CSS(`#stopout-0 button[data-action="reset-0"]`)))
	b.poll("the reset done", `location.search.includes("done=reset") && !document.querySelector("#stopout-badge-0")`, 10*time.Second)
	var resets int64
	var stillStopped bool
	must(t, db.Pool.QueryRow(ctx, `SELECT reset_gen, state ? 'stop' FROM protection_state WHERE follower_id = 103 AND link_id = 0`).Scan(&resets, &stillStopped))
	if resets != 1 || stillStopped {
		t.Fatalf("after the reset: %d resets, stopped %v", resets, stillStopped)
	}

	// Disable account 101 from its page: its owner releases it.
	b.do("disable account 101",
		chromedp.Navigate(base+"/accounts/101"),
		chromedp.WaitVisible(chromedp.CSS(`#toggle-account button[data-action="disable"]`)),
		chromedp.Click(chromedp.CSS(`#toggle-account button[data-action="disable"]`)),
		chromedp.WaitVisible(chromedp.ID("disabled-badge")),
	)
	eventually(t, "the owner releases account 101", 10*time.Second, func() (bool, string) {
		var node *string
		must(t, db.Pool.QueryRow(ctx, `SELECT node_id FROM trading_accounts WHERE id = 101`).Scan(&node))
		return node == nil, fmt.Sprintf("node_id %v", node)
	})
	b.poll("the page shows 101 free", `/free/.test((document.querySelector('#owner') || {}).textContent || '')`, 10*time.Second)
	b.shot("account-101-disabled")

	// The cluster page shows both nodes.
	b.do("cluster page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("nodes")))
	b.poll("both nodes listed", `!!document.querySelector('#nodes tr[data-node="node-a"]') && !!document.querySelector('#nodes tr[data-node="node-b"]')`, 10*time.Second)
	b.poll("both nodes live, with their shares", `!!document.querySelector('#live-nodes tr[data-live-node="node-a"]') && !!document.querySelector('#live-nodes tr[data-live-node="node-b"]')`, 10*time.Second)
	cluster := b.shot("cluster")

	// The accounts page for the documentation.
	b.do("accounts page", chromedp.Navigate(base+"/accounts"), chromedp.WaitVisible(chromedp.CSS(`#accounts tr[data-id="102"]`)))
	accounts := b.shot("accounts-final")
	if dir := os.Getenv(EnvScreenshotDir); dir != "" {
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "accounts.png"), accounts, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "cluster.png"), cluster, 0o644))
		t.Logf("screenshots written to %s", dir)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("the pages raised JavaScript or security errors:\n%s", strings.Join(errs, "\n"))
	}
}
