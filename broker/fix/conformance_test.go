package fix_test

import (
	"testing"

	"github.com/snapcopier/copier/broker/brokertest"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// TestConformance runs the broker conformance suite over FIX on loopback, in both front
// modes: a fresh simulator behind a fresh FIX front, and a fresh FIX broker, for every
// subtest.
func TestConformance(t *testing.T) {
	// ctrader: the simulator's own front (custom tags, SecurityList, positions, feeds).
	t.Run("ctrader", func(t *testing.T) {
		brokertest.Run(t, func(t *testing.T) brokertest.Env {
			e := newEnv(t, envOptions{})
			return brokertest.Env{Broker: e.broker, Control: e.sim, NoTokenFence: true}
		})
	})
	// fix44: the strict front (stock dictionary only) and the fix44 dialect with the
	// simulator's symbols as the node's list and the position book in memory.
	t.Run("fix44", func(t *testing.T) {
		brokertest.RunExcept(t, strictExclusions, func(t *testing.T) brokertest.Env {
			s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
			e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true},
				client: fix.Config{Dialect: fixwire.DialectFIX44, Symbols: simSymbols(t, s)}})
			return brokertest.Env{Broker: e.broker, Control: e.sim, NoTokenFence: true}
		})
	})
}

// strictExclusions are the conformance cases a standard FIX 4.4 venue cannot serve, and why.
// Most are the position book's: a fix44 broker serves Positions from its own fills, with
// tickets of its own (the venue names no position), netting, so a case that compares the
// session's positions with the Controller's by ticket cannot hold.
var strictExclusions = func() brokertest.Exclusions {
	const (
		book     = "positions come from the broker's position book, with its own tickets (the venue names no position) and netting; the suite compares them with the Controller's by ticket"
		stops    = "stops are resting protective orders in fix44, on the book's positions: the suite reads them off the Controller's positions by ticket"
		codes    = "a standard venue's reject carries OrdRejReason (103) and Text (58) only, so the server's trade error code (volume, money) is not on the wire: the class is kept (permanent), the code is CodeInvalidRequest"
		feeds    = "the strict venue refuses RequestForPositions (subscriptions and polling both need it): a fix44 account cannot be a master"
		collInq  = "the strict venue refuses CollateralInquiry (BB): Account answers with the equity unknown (EquityUnknown), which the suite's balance and equity checks cannot compare"
		noTokens = "the fence (9001/9003) does not travel in fix44 (custom tags): the venue cannot refuse a stale token"
	)
	return brokertest.Exclusions{
		"AccountInfo":                     collInq,
		"SymbolSuffix":                    "a configured symbol list names the venue's symbols as they are: the suffixed account would need its own list (Credentials.FIX.Symbols)",
		"OpenModifyPartialClose":          stops,
		"StopsValidation":                 "an open's stops are resting orders placed after its fill: a stop the venue refuses is logged and surfaced by the next Modify, never returned by Open (the market order has executed)",
		"VolumeRules":                     codes,
		"NotEnoughMoney":                  codes,
		"OrderLog":                        codes,
		"CommentTruncated":                book,
		"ConcurrentOrders":                book,
		"NettingMergesSymbol":             book,
		"HedgingKeepsPositionsApart":      book + "; fix44 serves netting accounts only",
		"DedupRequests":                   book,
		"ExpiredDeadline":                 book,
		"FeedEventKinds":                  feeds,
		"FeedInOrder":                     feeds,
		"FeedNewEpochPerSubscription":     feeds,
		"FeedClosesWithContextAndSession": feeds,
		"FeedDroppedEventGap":             feeds,
		"FeedDisconnectFault":             feeds,
		"TokenEnforcement":                noTokens,
	}
}()
