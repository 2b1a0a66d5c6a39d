package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// retention checks ClauseRetention: what every answer of the run, and GET
// /contract, state of the retention. It keeps what GET /contract states
// in c.stated, for the report.
func (c *checker) retention(ctx context.Context) Result {
	cl := ClauseRetention
	contract, contractErr := c.readContract(ctx)
	if contractErr == nil {
		c.stated = &contract
	}
	c.mu.Lock()
	answers := slices.Clone(c.answers)
	c.mu.Unlock()
	var stated []string
	for _, a := range answers {
		if len(a.values) != 1 {
			return fail(cl, "%s states Idempotency-Retention %d times, want once (%d answers)", a.request, len(a.values), len(answers))
		}
		if n, err := strconv.ParseInt(a.values[0], 10, 64); err != nil || n < 0 {
			return fail(cl, "%s states Idempotency-Retention %q, want whole seconds", a.request, a.values[0])
		}
		if !slices.Contains(stated, a.values[0]) {
			stated = append(stated, a.values[0])
		}
	}
	switch {
	case len(answers) == 0:
		return fail(cl, "no answer stated a retention: the receiver answered nothing")
	case len(stated) != 1:
		return fail(cl, "the answers state Idempotency-Retention %v, want one value", stated)
	case contractErr != nil:
		return fail(cl, "Idempotency-Retention %s; %v", stated[0], contractErr)
	}
	seconds := strconv.FormatInt(int64(contract/time.Second), 10)
	if stated[0] != seconds {
		return fail(cl, "Idempotency-Retention %s, but GET /contract says %s", stated[0], seconds)
	}
	if want := c.opts.Retention; want != nil && int64(*want/time.Second) != int64(contract/time.Second) {
		return fail(cl, "the receiver states %s, want %s", retentionText(contract), retentionText(*want))
	}
	return pass(cl, "all %d answers and GET /contract state %s", len(answers), retentionText(contract))
}

// retentionText is a retention in words: "3600 s (1h0m0s)", "0 s (forever)".
func retentionText(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10) + " s"
	if d < time.Second {
		return s + " (forever)"
	}
	return s + " (" + (d / time.Second * time.Second).String() + ")"
}

// readContract reads the retention GET /contract states.
func (c *checker) readContract(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath("contract").String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", userAgent)
	r, err := do(c.client, req)
	if err != nil {
		return 0, fmt.Errorf("GET /contract: %w", err)
	}
	var body struct {
		RetentionSeconds *int64 `json:"idempotency_retention_seconds"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil || body.RetentionSeconds == nil || *body.RetentionSeconds < 0 || *body.RetentionSeconds > int64(time.Duration(1<<62)/time.Second) {
		return 0, fmt.Errorf("GET /contract → %d, want 200 with idempotency_retention_seconds: %s", r.status, excerpt(r.body))
	}
	return time.Duration(*body.RetentionSeconds) * time.Second, nil
}
