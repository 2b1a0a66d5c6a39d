package lanes

import (
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
)

// laneProtocol names the messages below: a lane refuses a run that does
// not start with it (a person at the keyboard, or an executable replaced
// under a running explore).
const laneProtocol = "handoff explore-lane 1"

// laneStart is the first message a lane reads: the run it is a lane of.
type laneStart struct {
	Protocol    string
	Design      string
	Checks      int
	Steps       int
	Seed        uint64
	Shard       int
	Shards      int
	NoSwarm     bool
	Transport   sim.Transport
	Backend     backend.Backend
	PostgresURL string
	ConnectWait time.Duration
	Dir         string // the folder the lane makes its own in
}

// laneGrant answers a lane's request for its next sequences: their
// indexes, laneChunk at most, in increasing order; none when the lane
// must stop.
type laneGrant struct {
	Indexes []int64
}

// laneChunk is how many sequences a lane is granted at a time: a request
// costs explore's process a wake-up, on a processor the lanes could use,
// and a sequence costs much more than a wake-up. At the end of a run, a
// lane may still hold that many when the others are done.
const laneChunk = 4

// laneMessage is one message of a lane to explore: its counts (about once
// a second), a request for its next sequence, the index of a sequence
// that failed (before it is shrunk), or its report, the last message.
// (Gob sends no zero value, not even through a pointer: index 0 needs
// Failed beside it.)
type laneMessage struct {
	Counts *laneCounts
	Next   bool
	Failed bool
	Index  int64
	Report *laneReport
}

// laneCounts are the counters of a lane's Stats.
type laneCounts struct {
	Sequences, ShrinkRuns, Steps int64
}

// laneReport is how a lane ended: what it counted and its failure, or the
// error that stopped it.
type laneReport struct {
	Stats       *sim.Stats
	Interrupted bool
	Failure     *sim.Failure
	FirstAt     time.Time
	FailureSeed uint64
	Problem     string
	Err         string
	// Environment says that Err is a failure of the environment (see
	// backend.ErrEnvironment).
	Environment bool `json:",omitempty"`
}
