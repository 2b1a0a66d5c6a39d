package trial

import (
	"math/rand/v2"
	"time"
)

// killPlan is one kill as the seed draws it: once worker process witness
// has logged lines more deliveries (or maxWait passed) and extra more has
// passed, the witness is killed, or the server; it starts again after
// pause.
type killPlan struct {
	witness, lines int
	extra, pause   time.Duration
	server         bool
}

// planTrial draws every choice of a trial from its seed alone: how many
// of the rows are approved before the workers start and before each kill
// (batches), and the kills. The server is killed in one kill in five
// when withServer.
func planTrial(seed uint64, kills, rows, workers int, withServer bool) ([]int, []killPlan) {
	draw := rand.New(rand.NewPCG(seed, 0))
	batches := make([]int, kills+1)
	for range rows {
		batches[draw.IntN(len(batches))]++
	}
	plans := make([]killPlan, kills)
	for k := range plans {
		plans[k] = killPlan{
			witness: draw.IntN(workers),
			lines:   draw.IntN(4),
			extra:   time.Duration(draw.Int64N(int64(maxExtra))),
			server:  draw.IntN(5) == 0 && withServer,
			pause:   time.Duration(draw.Int64N(int64(maxPause))),
		}
	}
	return batches, plans
}
