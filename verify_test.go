package handoff

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/system"
)

// Verify's own tests run a design chosen by the environment, so that
// TestVerifyReportsWhatBroke can run TestVerify as a child process on a
// design that must fail, and read what a user's go test prints.
const (
	verifyDesignEnv  = "HANDOFF_VERIFY_DESIGN"  // a catalog name, or receiver:NAME for WithReceiver of NAME's receiver
	verifyCorpusEnv  = "HANDOFF_VERIFY_CORPUS"  // the child's VerifyOptions.Corpus
	verifyBuiltinEnv = "HANDOFF_VERIFY_BUILTIN" // set: the child replays the module's corpus too
)

// verifyDesign is the design the environment names for TestVerify:
// designs.Handoff when it names none.
func verifyDesign(t *testing.T) designs.Design {
	name := os.Getenv(verifyDesignEnv)
	if name == "" {
		return designs.Handoff
	}
	if name == plainErrors.Name {
		return plainErrors
	}
	receiver, own := strings.CutPrefix(name, "receiver:")
	d, err := designs.Lookup(receiver)
	if err != nil {
		t.Fatal(err)
	}
	if own {
		return designs.WithReceiver("my-receiver", "the real handoff in front of "+d.Name+"'s receiver", d.OpenCRM)
	}
	return d
}

// plainErrors is the real outbox, one worker without a clock, whose
// approval refuses a key conflict with an error of its own that wraps no
// sentinel, and whose message holds a line separator: what a user's
// outbox may do.
var plainErrors = designs.Design{Name: "plain-errors", Summary: "a key conflict refused with an error of its own",
	OpenApp: func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
		app, err := designs.Handoff.OpenApp(ctx, path, opts)
		return plainErrorsApp{app}, err
	},
	OpenCRM: designs.Handoff.OpenCRM}

// plainErrorsApp is plainErrors' app.
type plainErrorsApp struct{ designs.App }

func (a plainErrorsApp) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	key, err := a.App.RecordApproval(ctx, caseID, title)
	if errors.Is(err, system.ErrKeyConflict) {
		return key, errors.New("this case was approved with another title:\u2028ask its owner")
	}
	return key, err
}

// TestVerify verifies the real design as a user's go test would, with
// the module's corpus, through the one public entry point. As the child
// of TestVerifyReportsWhatBroke it verifies the design that one names,
// with the module's corpus only when the environment asks for it, every
// scenario crashed at every fault point (but with -short), and a
// receiver of its own with new databases for every sequence
// (VerifyOptions.Fresh).
func TestVerify(t *testing.T) {
	name := os.Getenv(verifyDesignEnv)
	builtin := name == "" || os.Getenv(verifyBuiltinEnv) != ""
	Verify(t, verifyDesign(t), VerifyOptions{Builtin: builtin, Corpus: os.Getenv(verifyCorpusEnv), Enumerate: name != "" && !testing.Short(),
		Fresh: strings.HasPrefix(name, "receiver:")})
}

// TestVerifyReportsWhatBroke runs TestVerify in a child process on
// designs that break the spec, an outbox's shortcut and a receiver's, and
// checks what the user sees: the test fails, names the invariant, shows
// the minimal scenario and the command that saves it, and with
// HANDOFF_SAVE=1 saves it into the corpus folder, from which the next
// run replays it and fails again.
func TestVerifyReportsWhatBroke(t *testing.T) {
	t.Parallel()
	tests := []struct {
		design    string
		invariant string
		long      bool // shrinks on new databases for every run: not with -short
	}{
		{"count-after-send", "broke invariant 4", false},
		{"receiver:non-idempotent-receiver", "broke invariant 1", true},
	}
	for _, tt := range tests {
		t.Run(tt.design, func(t *testing.T) {
			t.Parallel()
			if tt.long && testing.Short() {
				t.Skip("-short: its shrinking makes new databases for every run")
			}
			corpus, work := t.TempDir(), t.TempDir()
			child := func(save string) string {
				return failingVerify(t, tt.design, corpus, work, "^TestVerify$", testing.Short(), SaveEnv+"="+save)
			}
			out := child("1")
			for _, want := range []string{"--- FAIL: TestVerify/property", tt.invariant, "minimal scenario (",
				"reproduce and save: HANDOFF_SAVE=1 go test -run '^TestVerify/property$' in this package's folder", "saved the minimal scenario as " + corpus,
				"the failure as a picture: " + corpus} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			property := out[strings.Index(out, "=== RUN   TestVerify/property"):]
			if n := strings.Count(property, "minimal scenario ("); n != 1 {
				t.Errorf("the failure is printed %d times, want once:\n%s", n, property)
			}
			// Every line the test logs is the user's: attributed to the
			// line that calls Verify, none to the harness's files, and no
			// draw of rapid's.
			if strings.Contains(out, "[rapid]") {
				t.Errorf("the output shows rapid's own lines:\n%s", out)
			}
			for _, m := range regexp.MustCompile(`(?m)^\s+(\w+\.go):\d+: `).FindAllStringSubmatch(out, -1) {
				if m[1] != "verify_test.go" {
					t.Errorf("a line is attributed to %s, not to the test that calls Verify:\n%s", m[1], out)
					break
				}
			}
			saved, err := filepath.Glob(filepath.Join(corpus, "*.txt"))
			if err != nil || len(saved) != 1 {
				t.Fatalf("saved %v (%v), want one scenario", saved, err)
			}
			if picture, err := os.ReadFile(strings.TrimSuffix(saved[0], ".txt") + ".html"); err != nil || !bytes.Contains(picture, []byte("<svg")) {
				t.Errorf("no report beside the saved scenario (%v)", err)
			}
			out = child("")
			if want := "--- FAIL: TestVerify/replay/" + filepath.Base(saved[0]); !strings.Contains(out, want) || !strings.Contains(out, tt.invariant) {
				t.Errorf("the next run does not fail on the saved scenario (want %q and %q):\n%s", want, tt.invariant, out)
			}
			if m := regexp.MustCompile(`the failure as a picture: (\S+)`).FindStringSubmatch(out); m == nil {
				t.Errorf("the replay's failure gives no report:\n%s", out)
			} else if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("the replay's report: %v", err)
			}
			if !testing.Short() && !strings.Contains(out, "Enumerate: every scenario replayed is crashed") {
				t.Errorf("Enumerate ran without a word in the log:\n%s", out)
			}
		})
	}
}

// TestVerifySavesOnlyIntoACorpus: with HANDOFF_SAVE=1 and no corpus
// folder, a failure saves no scenario anywhere (not in the package's
// folder, where the test runs) and says how to keep it.
func TestVerifySavesOnlyIntoACorpus(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	out := failingVerify(t, "count-after-send", "", work, "^TestVerify$", true, SaveEnv+"=1")
	if want := "set VerifyOptions.Corpus to a folder"; !strings.Contains(out, want) || strings.Contains(out, "the minimal scenario as") || strings.Contains(out, "saving the minimal scenario") {
		t.Errorf("the output lacks %q, or says it saved or tried to save:\n%s", want, out)
	}
	left, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if e.Name() != "testdata" { // rapid's fail files
			t.Errorf("the failure left %s in the test's folder", e.Name())
		}
	}
}

// TestVerifyFailsOnce: a design that breaks most of the module's
// scenarios fails the test once, with the first scenario that broke it;
// the scenarios after it and the search are skipped, each saying which
// failed first.
func TestVerifyFailsOnce(t *testing.T) {
	t.Parallel()
	out := failingVerify(t, "count-after-send", t.TempDir(), t.TempDir(), "^TestVerify$", true, verifyBuiltinEnv+"=1")
	failed := regexp.MustCompile(`(?m)^\s+--- FAIL: TestVerify/(\S+)`).FindAllStringSubmatch(out, -1)
	if len(failed) != 1 || !strings.HasPrefix(failed[0][1], "replay/handoff/") {
		t.Fatalf("got %d failing parts, want one replay of the module's corpus:\n%s", len(failed), out)
	}
	skipped := strings.Count(out, "failed first; fix that")
	if skipped < 2 || !strings.Contains(out, "--- SKIP: TestVerify/property") {
		t.Errorf("%d parts skipped after the failure, want every one after it and the search:\n%s", skipped, out)
	}
}

// TestVerifyEnumerateReportsACrash runs TestVerify in a child process on
// two-writes, replaying a scenario of the user's own that breaks nothing
// as it runs: only a crash between the design's two writes loses the
// outbox row. Enumerate, which crashes the scenario at every fault point
// it passes, must fail the replay and say where it crashed and what broke.
func TestVerifyEnumerateReportsACrash(t *testing.T) {
	t.Parallel()
	corpus := t.TempDir()
	scenario := "approve case=case-1 title=\"Call back\"\n----\n"
	if err := os.WriteFile(filepath.Join(corpus, "mine.txt"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not -short, so that the child runs Enumerate (see TestVerify).
	out := failingVerify(t, "two-writes", corpus, t.TempDir(), "^TestVerify$/^replay$/^mine", false)
	for _, want := range []string{"--- FAIL: TestVerify/replay/mine.txt", "mine.txt:1: approve crashed at between-approval-inserts",
		"invariant 2 (every approval has exactly one outbox row and every row its approval) broke"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// failingVerify runs the tests that run selects of TestVerify in a child
// process, verbose, on design with corpus as its corpus folder and env
// added to its environment, from dir (where rapid writes its fail files,
// as in a user's package), and returns what it printed. It fails t
// unless the child failed as a test fails.
func failingVerify(t *testing.T, design, corpus, dir, run string, short bool, env ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v", "-test.short="+strconv.FormatBool(short))
	// A report without a scenario file goes to a new folder of the
	// system's temporary folder: the test's own, removed after it.
	cmd.Env = append(append(os.Environ(), verifyDesignEnv+"="+design, verifyCorpusEnv+"="+corpus, "TMPDIR="+t.TempDir()), env...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
		t.Fatalf("TestVerify on %s did not fail as a test fails (%v):\n%s", design, err, out)
	}
	return string(out)
}

// TestVerifyScenarios checks which scenarios Verify replays: the
// module's corpus of the real design but what a design cannot run or
// what needs the other backend (a full SQLite file, a PostgreSQL
// connection lost at its COMMIT), and a
// user's folder, refusing a file of another design or not a scenario.
func TestVerifyScenarios(t *testing.T) {
	names := func(d designs.Design, b Backend) []string {
		scenarios, err := builtinScenarios(d, b)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, sc := range scenarios {
			ns = append(ns, sc.Name)
		}
		return ns
	}
	all, oneWorker, onPostgres := names(designs.Handoff, SQLite), names(designs.Design{Name: "mine"}, SQLite), names(designs.Handoff, Postgres)
	for _, tt := range []struct {
		list    []string
		name    string
		present bool
	}{
		{all, "handoff/corpus/lost-reply-demo.txt", true},
		{all, "handoff/corpus/workers-stale-settle.txt", true},
		{all, "handoff/corpus/app-busy.txt", true},
		{all, "handoff/corpus/commit-lost.txt", false}, // PostgreSQL only
		{all, "handoff/corpus/app-full.txt", true},     // SQLite only
		{onPostgres, "handoff/corpus/commit-lost.txt", true},
		{onPostgres, "handoff/corpus/app-full.txt", false},
		{onPostgres, "handoff/corpus/lost-reply-demo.txt", true},
		{all, "handoff/corpus/fragile/two-writes.txt", false},
		{oneWorker, "handoff/corpus/lost-reply-demo.txt", true},
		{oneWorker, "handoff/corpus/workers-stale-settle.txt", false}, // named workers
		{oneWorker, "handoff/corpus/app-busy.txt", false},             // a fault of the databases
	} {
		if got := slices.Contains(tt.list, tt.name); got != tt.present {
			t.Errorf("%s replayed: %v, want %v", tt.name, got, tt.present)
		}
	}

	dir := t.TempDir()
	for name, text := range map[string]string{
		"other.txt": "design name=two-writes\n----\n",
		"notes.txt": "Scenarios our team found. Keep them.\n",
		"mine.txt":  "design name=mine\n----\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := corpusPaths(dir)
	if err != nil || len(paths) != 3 {
		t.Fatalf("corpusPaths: %v, %v; want three files", paths, err)
	}
	for _, tt := range []struct{ file, want string }{
		{"other.txt", "runs design two-writes, not mine: edit its design line"},
		{"notes.txt", "every *.txt file of the corpus folder is a scenario"},
		{"mine.txt", ""},
	} {
		_, err := readOwnScenario(filepath.Join(dir, tt.file), designs.Design{Name: "mine"})
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.file, err, tt.want)
		}
	}
	if paths, err := corpusPaths(filepath.Join(dir, "not-yet")); paths != nil || err != nil {
		t.Errorf("a corpus folder not made yet: got %v, %v; want nothing to replay", paths, err)
	}
}

func TestNameClash(t *testing.T) {
	mine := designs.WithReceiver("handoff", "", designs.Handoff.OpenCRM)
	mine.OpenApp = func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
		return designs.Handoff.OpenApp(ctx, path, opts)
	}
	renamed := mine
	renamed.Name = "mine"
	for _, tt := range []struct {
		d     designs.Design
		clash bool
	}{{designs.Handoff, false}, {designs.Fragile[0], false}, {mine, true}, {renamed, false}} {
		if err := nameClash(tt.d); (err != nil) != tt.clash {
			t.Errorf("%s: got %v, want a clash: %t", tt.d.Name, err, tt.clash)
		}
	}
}

// TestVerifyOnPostgres verifies the real design with its app database in
// PostgreSQL, as a user's outbox on PostgreSQL would be verified: OpenApp
// gets the URL of a schema of the run's own, emptied between sequences;
// the module's corpus is replayed and crashed at every fault point there
// (under -short only the search runs: TestCorpus replays PostgreSQL's own
// files there). It runs beside TestVerifyRunningPoolOnPostgres, which mostly waits.
func TestVerifyOnPostgres(t *testing.T) {
	t.Parallel()
	Verify(t, designs.Handoff, VerifyOptions{Steps: 5, Backend: Postgres, PostgresURL: pgtest.URL(t), Builtin: !testing.Short(), Enumerate: true})
}

// TestPublicConstants: the public face says what the harness uses.
func TestPublicConstants(t *testing.T) {
	if DefaultChecks != explore.DefaultChecks || DefaultSteps != explore.DefaultSteps || PostgresURLEnv != backend.PostgresURLEnv {
		t.Errorf("handoff's %d checks, %d steps, %s; the harness's %d, %d, %s", DefaultChecks, DefaultSteps, PostgresURLEnv,
			explore.DefaultChecks, explore.DefaultSteps, backend.PostgresURLEnv)
	}
	if string(SQLite) != string(backend.SQLite) || string(Postgres) != string(backend.Postgres) {
		t.Errorf("handoff's backends %s and %s; the harness's %s and %s", SQLite, Postgres, backend.SQLite, backend.Postgres)
	}
}

// TestFewerViews: the real outbox declared with fewer views of its rows
// (no fences, no lease holders, no first claims) and restarts that keep
// their leases (the harness then does not call Recover, so the real
// outbox's leases run out as a queue's visibility timeout does) holds
// under the model of what it declares; and the shortcut of no-fencing,
// declared without fences, is caught all the same: the harness judges a
// settle by the claims it saw. Its documented counterexample, replayed
// on the design without fences, breaks invariant 8; with -deep (.ci/deep)
// the search finds it again too, which costs its shrinking some 5,000
// runs. (300 sequences of the design with fewer views; 100 with -short.)
func TestFewerViews(t *testing.T) {
	t.Parallel()
	fewer := func(d designs.Design, name string) designs.Design {
		d.Name = name
		d.Supports.Fences, d.Supports.Holders, d.Supports.Retention, d.Supports.RestartReleases = false, false, false, false
		return d
	}
	checks := 300
	if testing.Short() {
		checks = 100
	}
	r, err := Explore(t.Context(), ExploreConfig{Design: fewer(designs.Handoff, "handoff-fewer-views"), Checks: checks, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure != nil {
		t.Fatalf("the real outbox with fewer views failed:\n%s", r.Failure.Report(""))
	}
	noFencing, err := designs.Lookup("no-fencing")
	if err != nil {
		t.Fatal(err)
	}
	noFencing = fewer(noFencing, "no-fencing-fewer-views")
	if v := replayOn(t, noFencing, "corpus/fragile/no-fencing.txt"); v == nil || !slices.Contains(append([]int{v.Invariant}, v.Also...), 8) {
		t.Errorf("no-fencing's counterexample without fences shown: got violation %v, want invariant 8 among those broken", v)
	}
	if !*deep {
		return
	}
	r, err = Explore(t.Context(), ExploreConfig{Design: noFencing, Checks: DefaultChecks, Seed: 4, Dir: t.TempDir()})
	switch {
	case err != nil:
		t.Fatal(err)
	case r.Failure == nil:
		t.Fatalf("no-fencing without fences shown was not caught in %d sequences", r.Sequences)
	case !slices.Contains(append([]int{r.Failure.Violation.Invariant}, r.Failure.Violation.Also...), 8):
		t.Errorf("no-fencing without fences shown: got invariant %d (also %v), want 8 among them:\n%s",
			r.Failure.Violation.Invariant, r.Failure.Violation.Also, r.Failure.Report(""))
	}
}

// replayOn replays the corpus file name, but its design line, on design
// d, and returns the violation of its last step.
func replayOn(t *testing.T, d designs.Design, name string) *Violation {
	t.Helper()
	scenarios, err := sim.Corpus(Corpus)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(scenarios, func(sc sim.Scenario) bool { return sc.Name == name })
	if i < 0 {
		t.Fatalf("no %s in the corpus", name)
	}
	env, err := sim.NewEnv(t.Context(), sim.Config{Design: d, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var last sim.Outcome
	for _, c := range scenarios[i].Cases {
		if c.Step.Directive == "design" {
			continue
		}
		if last, err = env.Apply(t.Context(), c.Step); err != nil {
			t.Fatalf("%s:%d: %v", name, c.Line, err)
		}
	}
	return last.Violation
}

// TestVerifyNamesWhatWasExpected runs TestVerify in a child process on
// an outbox that refuses a key conflict with an error of its own, and
// checks that the failure names the sentinel the error must wrap, in the
// user's terms, and prints the error's line separator escaped.
func TestVerifyNamesWhatWasExpected(t *testing.T) {
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestVerify$/^replay$/^handoff$/^approve-conflict", "-test.count=1", "-test.v", "-test.short")
	cmd.Env = append(os.Environ(), verifyDesignEnv+"="+plainErrors.Name, verifyBuiltinEnv+"=1", "TMPDIR="+t.TempDir()) // its reports: see failingVerify
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
		t.Fatalf("TestVerify on %s did not fail as a test fails (%v):\n%s", plainErrors.Name, err, out)
	}
	for _, want := range []string{
		"--- FAIL: TestVerify/replay/handoff/approve-conflict.txt",
		`the system answered "error", the model predicted "conflict": the error must wrap system.ErrKeyConflict`,
		`refused: this case was approved with another title:\u2028ask its owner`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("\u2028")) {
		t.Errorf("the output prints a raw U+2028:\n%s", out)
	}
}

// TestCrashedWhere: Enumerate's line in the log names every step that
// passed a fault point, by its line, with the points it crashed at.
func TestCrashedWhere(t *testing.T) {
	deliver := sim.Case{Line: 9, Step: sim.NewStep("deliver")}
	approve := sim.Case{Line: 2, Step: sim.NewStep("approve")}
	points := []sim.CrashPoint{
		{Pass: 1, Point: system.PointBetweenApprovalInserts, Case: approve},
		{Pass: 2, Point: system.PointBeforeSend, Case: deliver},
		{Pass: 3, Point: system.PointAfterReply, Case: deliver},
	}
	want := "line 2 approve at between-approval-inserts; line 9 deliver at before-send, after-reply"
	if got := crashedWhere(points); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestVerifyReportFolder: the report of a failure that has no scenario
// file to go beside is written in a folder of its own run, named after
// the test, not in one folder every run on the machine shares: two runs
// write two folders; with go test -artifacts, the test's artifact folder
// under -outputdir.
func TestVerifyReportFolder(t *testing.T) {
	t.Parallel()
	corpus := t.TempDir()
	scenario := "approve case=case-1 title=\"Call back\" fault=crash-between-inserts\n----\n"
	if err := os.WriteFile(filepath.Join(corpus, "mine.txt"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	const name = "TestVerify_replay_mine.txt"
	picture := regexp.MustCompile(`the failure as a picture: (\S+)`)
	reported := func(out string) string {
		t.Helper()
		m := picture.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no report of the failure:\n%s", out)
		}
		if b, err := os.ReadFile(m[1]); err != nil || !bytes.Contains(b, []byte("<svg")) || filepath.Base(m[1]) != name+".html" {
			t.Errorf("the report %s (%v): want a page named after the test", m[1], err)
		}
		return filepath.Dir(m[1])
	}
	var folders []string
	for range 2 {
		folder := reported(failingVerify(t, "two-writes", corpus, t.TempDir(), "^TestVerify$/^replay$/^mine", true))
		if !strings.HasPrefix(filepath.Base(folder), "handoff-report-"+name+"-") {
			t.Errorf("the report's folder %s is not named after the test", folder)
		}
		folders = append(folders, folder)
	}
	if folders[0] == folders[1] {
		t.Errorf("two runs wrote their reports in the same folder, %s", folders[0])
	}
	outputs := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestVerify$/^replay$/^mine", "-test.count=1", "-test.v", "-test.short",
		"-test.artifacts", "-test.outputdir="+outputs)
	cmd.Env = append(os.Environ(), verifyDesignEnv+"=two-writes", verifyCorpusEnv+"="+corpus)
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	if folder := reported(string(out)); !strings.HasPrefix(folder, filepath.Join(outputs, "_artifacts")+string(filepath.Separator)) {
		t.Errorf("with -artifacts the report is in %s, want the test's artifact folder under %s", folder, outputs)
	}
}

// TestReplayReportsTheFirstBrokenStep: a scenario whose invariant stays
// broken over the steps after the one that broke it is reported at that
// step, with the mismatch of a step whose output the file lacks.
func TestReplayReportsTheFirstBrokenStep(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("corpus", "fragile", "check-then-create.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := 1 + slices.Index(strings.Split(string(text), "\n"), "deliver fault=duplicate-request")
	path := filepath.Join(t.TempDir(), "longer.txt")
	if err := os.WriteFile(path, append(text, "\ndeliver\n----\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Replay(t.Context(), path, ReplayOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Invariant != 1 || r.Line != want || len(r.Mismatches) != 1 {
		t.Errorf("violation %v at line %d, %d mismatches; want invariant 1 at line %d and the added step's mismatch", r.Violation, r.Line, len(r.Mismatches), want)
	}
}

// TestExploreSeedReproduces: a failure's Seed, given back as the seed of
// a one-sequence exploration, finds the same failure first.
func TestExploreSeedReproduces(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: it searches and shrinks a fragile design's failure; run without -short")
	}
	d, err := designs.Lookup("count-after-send")
	if err != nil {
		t.Fatal(err)
	}
	first, err := Explore(t.Context(), ExploreConfig{Design: d, Checks: 100, Seed: 2, Dir: t.TempDir()})
	if err != nil || first.Failure == nil {
		t.Fatalf("count-after-send, seed 2: %v, %v; want a failure", first.Failure, err)
	}
	again, err := Explore(t.Context(), ExploreConfig{Design: d, Checks: 1, Seed: first.Seed, Dir: t.TempDir()})
	if err != nil || again.Failure == nil || again.Failure.Scenario() != first.Failure.Scenario() {
		t.Fatalf("seed %d again: %v, %v; want the same failure:\n%s", first.Seed, again.Failure, err, first.Failure.Scenario())
	}
	if first.Seed == 2 {
		t.Errorf("the failure's seed is the run's, 2: the failure is not at its first sequence, pick a seed whose first sequence passes")
	}
}
