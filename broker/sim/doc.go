// Package sim is an in-memory simulated MetaTrader-like trade server: a real trade server
// for tests, the demo and stress runs, not a mock. A *Server implements broker.Broker
// (trading sessions) and broker.Controller (provisioning, master trades, order log,
// faults, options); broker/bridge exposes it over the network.
//
// # Accounts and symbols
//
// Accounts have a login, a password (empty accepts any), a currency, a balance, a
// leverage, a mode (hedging or netting) and a symbol suffix: an account with suffix ".m"
// sees and must trade "EURUSD.m". Equity is balance plus the floating P/L of the open
// positions at the current prices. Each symbol has a contract size, lot limits (min, max,
// step), digits and a fixed spread; its price is a seeded random walk, one step per
// Config.TickInterval of the server clock, advanced lazily when read. DefaultSymbols lists
// the defaults, among them two specifications of one index (US30 and DJ30) with different
// contract sizes on the same prices.
//
// # Orders
//
// Sessions and Controller master trades name symbols as the account sees them, suffix
// included. Only market orders are supported: a pending order (Limit, Stop) is rejected with
// ErrPermanent / CodeInvalidRequest. Opens execute at the ask (buy) or bid (sell); closes
// at the other side. Checks, in order: unknown symbol or ticket (CodeInvalidRequest),
// trade disabled (CodeTradeDisabled, see SetTradeAllowed), market closed
// (ErrMarketClosed, see SetMarketOpen), volume below the minimum, above the maximum or off
// the lot step, within a small tolerance (CodeInvalidVolume), stops on the wrong side of
// the price the position would close at (CodeInvalidStops), and margin (CodeNoMoney).
// Comments are cut to broker.MaxCommentLen bytes without splitting a UTF-8 character.
//
// Hedging accounts keep every position apart. Netting accounts hold one position per
// symbol: an order on the same side adds volume at the volume-weighted price (a Modified
// event; non-zero SL/TP of the order replace the position's); the other side reduces it
// (PartiallyClosed), closes it (Closed), or closes it and opens the rest the other way
// under a new ticket (Closed, then Opened).
//
// A partial close keeps the ticket (MT5 style); MT4's new ticket for the remainder is not
// simulated. With Config.OverwriteCommentOnPartialClose the remainder's comment becomes
// "from #<ticket>". With Config.TriggerStops, a position whose SL or TP the price has
// reached closes with the comment "[sl]" or "[tp]"; stops are evaluated whenever the
// account is used and by CheckStops, against the price at that moment. Such closes are
// server actions, not requests, and are not in the order log.
//
// Closing books the P/L into the balance, converted into the account currency through
// US dollar rates taken from the current mid prices of the configured pairs (a currency
// no pair prices counts as one dollar). Margin is volume × contract size × open price
// ÷ leverage, converted the same way; hedged positions get no margin relief. There are no
// commissions, swaps, stop levels, stop-outs or slippage beyond the spread.
//
// # Order log, tokens and de-duplication
//
// Every order request from a session and every master trade made through the Controller
// (Master true, Node "", a generated request id) is logged once, numbered 1, 2, 3 ... in
// arrival order and stamped by the server clock, with what really happened: Executed,
// Duplicate, the return code and the error. Requests that an injected fault stopped are
// logged too, not executed.
//
// An order that arrives after its Order.Deadline (by the server clock) is refused with
// ErrExpired / CodeExpired before anything else and never executes. Session.Fence raises
// the account's highest seen token without trading (a new owner's first request).
//
// With ServerOptions.EnforceTokens, an order whose token is lower than the highest seen
// for the account fails with ErrFenced / CodeFencedToken; the highest token is tracked
// even while enforcement is off. With ServerOptions.DedupRequests, an order whose request
// id was answered before gets that first answer again without executing (logged with
// Duplicate set). Only answers the trade logic gave are remembered — a result or a
// permanent rejection; transient answers (requote, market closed, timeouts that lost the
// request, disconnects, fenced tokens) are not, so a retry with the same id is processed.
// Answers are remembered only while DedupRequests is on, Config.DedupWindow ids per
// account; the nil UUID is never de-duplicated.
//
// # Faults
//
// A broker.Faults profile applies globally or per account (an account's own profile wins;
// see ClearFaults). Every decision is drawn from a per-account stream seeded by
// Config.Seed, so runs repeat. On a session call: Latency is waited before the request is
// sent (a context that ends meanwhile fails the call with ErrDisconnected wrapping the
// context error, and nothing executes); DisconnectRate fails any call with
// ErrDisconnected before it executes and closes every feed subscription of the account
// (sessions stay usable); on order calls, TimeoutRate answers ErrUnknownOutcome /
// CodeTimeout, and a seeded coin decides whether the request was lost (nothing happened)
// or its reply was (the server processed the order: it may have executed); RequoteRate
// answers ErrRetryable / CodeRequote without executing. Controller calls are never failed
// by faults, but a master trade draws DisconnectRate once: on a hit it executes and the
// account's feeds drop before its events are published.
//
// # Feed
//
// Session.Subscribe streams the session account's position events: Opened, Modified,
// PartiallyClosed (Position holds the remaining volume) and Closed (its last state), for
// session orders, master trades and triggered stops alike. Each subscription has a new
// epoch, unique in the server (they start at the server's start time in nanoseconds, so a
// restarted server does not reuse recent ones), and numbers its events from Seq 1 in
// order. DropEventRate drops single events per subscription: the Seq is used, the event
// is not sent, and the subscriber sees a gap. Events are sent without blocking into a
// channel of Config.FeedBuffer events: a subscription that is full when an event comes is
// closed (after the events already buffered), and its consumer must resubscribe and
// reconcile. A subscription also closes when its context ends, its session closes, or a
// disconnect fault drops the account's connection.
//
// # Concurrency
//
// Each account has its own lock, held for the whole of one call on it; symbols have their
// own price locks and the order log has one lock held only to append. Thousands of
// sessions trade concurrently without a global lock on the hot path. The server owns no
// goroutines: a subscription's context is watched with context.AfterFunc.
package sim
