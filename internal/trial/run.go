package trial

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// config is one trial.
type config struct {
	exe                  string // the handoff executable the processes run
	index                int    // 1 for the first trial
	seed                 uint64 // every choice of the trial is drawn from it
	kills, workers, rows int
	dir                  string // created for the trial's files and logs
	app                  string // the app database: a file in dir, or a PostgreSQL URL
	crmURL               string // a receiver that runs already; "" starts crm serve
	// connect returns a receiver once it has stated its contract.
	connect func(ctx context.Context, url string) (Receiver, error)
}

// result is what one trial did and found.
type result struct {
	kills         []killRecord
	findings      []filecheck.Finding
	sent, blocked int
	deliveries    int // delivery log lines the work processes printed
}

// runTrial runs one trial: it records approvals as it goes, kills and
// restarts processes as the seed draws, drains, and checks the files. An
// error means the trial could not run to its end; what the checks find
// is in the result.
func runTrial(ctx context.Context, cfg config) (result, error) {
	var res result
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return res, err
	}
	batches, plans := planTrial(cfg.seed, cfg.kills, cfg.rows, cfg.workers, cfg.crmURL == "")
	appPath, crmPath := cfg.app, filepath.Join(cfg.dir, "crm.db")
	app, err := system.Open(ctx, appPath, system.Options{MaxConns: 1})
	if err != nil {
		return res, err
	}
	defer app.Close()
	approved := 0
	approve := func(n int) error {
		for range n {
			if _, err := app.RecordApproval(ctx, fmt.Sprintf("s%d-r%d", cfg.seed, approved), "Follow up on the repair"); err != nil {
				return err
			}
			approved++
		}
		return nil
	}
	if err := approve(batches[0]); err != nil {
		return res, err
	}

	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
			p.log.Close()
		}
	}()
	var server *process
	url := cfg.crmURL
	if url == "" {
		c, err := system.OpenCRM(ctx, crmPath, system.Durable)
		if err != nil {
			return res, err
		}
		if err := c.Close(); err != nil {
			return res, err
		}
		server, err = startProcess(ctx, cfg, &procs, "server", "crm", "serve", "--crm", crmPath, "--addr", "127.0.0.1:0", "--retention", "1h")
		if err != nil {
			return res, err
		}
		url = "http://" + server.addr
		setFlag(server.args, "--addr", server.addr) // a restart listens where the workers send
	}
	remote, err := cfg.connect(ctx, url)
	if err != nil {
		return res, err
	}
	defer remote.Close()
	var workers []*process
	for i := range cfg.workers {
		args := append([]string{"work", "--app", appPath, "--crm-url", url, "--worker", fmt.Sprintf("trial-%d", i+1)}, workFlags...)
		w, err := startProcess(ctx, cfg, &procs, fmt.Sprintf("worker %d", i+1), args...)
		if err != nil {
			return res, err
		}
		workers = append(workers, w)
	}

	for k := range cfg.kills {
		if err := approve(batches[k+1]); err != nil {
			return res, err
		}
		plan := plans[k]
		w := workers[plan.witness]
		waited, err := w.waitDeliveries(ctx, plan.lines, maxWait)
		if err != nil {
			return res, err
		}
		if err := sleepCtx(ctx, plan.extra); err != nil {
			return res, err
		}
		rec := killRecord{Trial: cfg.index, Kill: k + 1, Moment: fmt.Sprintf("%d of %d deliveries by %s, then %d ms", waited, plan.lines, w.name, plan.extra/time.Millisecond)}
		victim := w
		if plan.server {
			victim = server
			rec.Landed, err = serverLanding(ctx, app)
			if err != nil {
				return res, err
			}
			rec.LastLine = server.kill()
		} else {
			rec.LastLine = w.kill()
			rec.Landed, err = workerLanding(ctx, app, remote, fmt.Sprintf("trial-%d:", plan.witness+1))
			if err != nil {
				return res, err
			}
		}
		rec.Target = victim.name
		res.kills = append(res.kills, rec)
		if err := sleepCtx(ctx, plan.pause); err != nil {
			return res, err
		}
		if err := victim.restart(ctx); err != nil {
			return res, err
		}
		for _, p := range procs {
			if f := p.died(); f != "" {
				res.findings = append(res.findings, filecheck.Finding{Where: p.name, What: f})
			}
		}
	}

	// Drain: the workers stop as SIGTERM asks, the last approvals are
	// recorded, and one more work process runs until nothing is pending.
	for _, w := range workers {
		if f := w.terminate(); f != "" {
			res.findings = append(res.findings, filecheck.Finding{Where: w.name, What: f})
		}
	}
	if err := approve(cfg.rows - approved); err != nil {
		return res, err
	}
	drain, err := startProcess(ctx, cfg, &procs, "drain", append([]string{"work", "--app", appPath, "--crm-url", url, "--worker", "trial-drain", "--until-idle"}, workFlags...)...)
	if err != nil {
		return res, err
	}
	if f := drain.finish(drainTimeout); f != "" {
		res.findings = append(res.findings, filecheck.Finding{Where: "drain (work --until-idle)", What: f})
	}
	for _, p := range append(workers, drain) {
		res.deliveries += p.deliveries()
	}
	if server != nil {
		if f := server.terminate(); f != "" {
			res.findings = append(res.findings, filecheck.Finding{Where: server.name, What: f})
		}
	}
	if err := app.Close(); err != nil {
		return res, err
	}

	findings, files, err := checkTrial(ctx, appPath, crmPath, cfg.crmURL, remote)
	if err != nil {
		return res, err
	}
	res.findings = append(res.findings, findings...)
	if len(files.App.Approvals) != cfg.rows {
		res.findings = append(res.findings, filecheck.Finding{Where: "approvals", What: fmt.Sprintf("the app holds %s, the trial recorded %d", words.HowMany(len(files.App.Approvals), "approval"), cfg.rows)})
	}
	var pending []string
	for _, r := range files.App.Outbox {
		switch r.State {
		case system.Sent:
			res.sent++
		case system.Blocked:
			res.blocked++
		default:
			pending = append(pending, r.Key)
		}
	}
	if len(pending) > 0 {
		res.findings = append(res.findings, filecheck.Finding{Where: "invariant 7 (with faults off, the workers converge)",
			What: fmt.Sprintf("%s still pending after work --until-idle, the first %s", words.HowMany(len(pending), "row"), pending[0])})
	}
	return res, writeKillLog(filepath.Join(cfg.dir, "kills.log"), res)
}

// writeKillLog writes one line per kill of a trial in its folder.
func writeKillLog(path string, r result) error {
	var b bytes.Buffer
	for _, k := range r.kills {
		fmt.Fprintf(&b, "kill %d: %s at %s: %s; its last line: %s\n", k.Kill, k.Target, k.Moment, k.Landed, k.LastLine)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// sleepCtx waits d, or returns ctx's error when it is cancelled first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return context.Cause(ctx)
}
