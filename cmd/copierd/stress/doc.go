// Package stress is `copierd stress`: thousands of simulated accounts, real node
// processes, injected faults, and a verdict.
//
// Run sets up a throwaway PostgreSQL (or uses Options.DatabaseURL), the simulated trade
// server (broker/sim) served over the bridge protocol, masters and followers with copy
// links of mixed sizing modes, and Options.Nodes `copierd run` processes, each reaching
// PostgreSQL through its own in-process toxiproxy proxy. The masters trade at
// Options.Rate events per second for Options.Duration while a seeded schedule injects
// faults: SIGKILL (and a new node), SIGSTOP for less and for more than the fence, a cut
// database link, database latency, a PostgreSQL restart, and simulator requotes,
// timeouts with unknown outcome, disconnects and dropped events. After a quiet
// convergence period the checker (check.go: pure functions of the order log, the final
// positions and the fault log) gives the verdict:
//
//  1. overlapping senders: orders for one follower from two senders (node, token) whose
//     sending periods overlap, and any order executed after a claim of its follower with a
//     newer epoch (the claim times come from the audit table), even when the new owner
//     has not sent anything yet; only a freeze longer than the fence may explain one, and
//     then the stale orders must be rejected (token enforcement on) or repaired;
//  2. duplicate copies left after convergence;
//  3. missed copies: open master positions without their copy, copies of closed ones;
//  4. failover time after each kill, against lease + interval;
//  5. copy latency, master event to follower order;
//  6. stale writes applied (an audit in the database watches every write) and dropped
//     work;
//  7. resource use per node.
//
// The files follow the run's jobs: run.go orders them (Run, execute); setup.go starts the
// database, the accounts and the trade server (through cmd/copierd/setup, which the demo
// shares); fleet.go starts, watches and stops the node processes (nodes.go: one process);
// observers.go samples ownership and scrapes metrics while the load runs; verdict.go waits
// for convergence and collects the final state that check.go judges and report.go writes.
//
// Everything is written to Options.OutDir: node logs, run.log, faults.log, report.json
// and the charts latency.png, ownership.png and failover.png.
package stress
