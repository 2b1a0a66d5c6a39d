// Package handoff checks an outbox against the handoff's contract
// (docs/spec.md): that an approved action reaches a system you do not
// control exactly once, as one task per action key, whatever replies are
// lost, workers crash, leases run out or a person repairs.
//
// It is a property-based fault simulation. Random sequences of approvals,
// deliveries, lost replies, crashes, interleaved workers, passing time
// and repairs, drawn by pgregory.net/rapid, run against the real
// databases of a design and against a pure reference model, and the
// contract's numbered invariants are checked after every step. A
// failure shrinks to a minimal scenario, a readable text file that
// replays it.
//
// Four entry points:
//
//   - Verify checks a design of your own (a designs.Design: your outbox
//     and its receiver) in your go test, step by step: your scenario
//     files, the module's corpus, every crash point, then the random
//     search.
//   - VerifyRunning checks an outbox as it runs (a designs.Running: your
//     library's own workers, one to three replicas of them, inside a
//     testing/synctest bubble), judged by the history checks H1–H8;
//     ReplayRunning replays one saved schedule and says how often it
//     broke a check.
//   - Explore runs the step mode's random search outside go test and
//     returns what it found instead of failing.
//   - Replay runs one scenario file and says where its outputs differ.
//
// The real handoff is package system; designs holds the interfaces a
// design implements and a catalog of fragile designs that the harness
// must catch.
package handoff
