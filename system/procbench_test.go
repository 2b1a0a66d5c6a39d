package system_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// workerProcessEnv, set in a process of the test binary, makes it a
// worker process of BenchmarkWorkerProcessesSlowReceiver (see TestMain):
// "APP|URL|NAME", the app database, the receiver's base URL and the
// worker's name.
const workerProcessEnv = "HANDOFF_BENCH_WORKER"

// runWorkerProcess is a worker process: it opens its Outbox and a
// crm.Sender to the receiver, says "ready", waits for a line on its
// standard input, then delivers through a Pipeline until nothing is
// eligible, and prints how many rows it settled.
func runWorkerProcess(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want APP|URL|NAME", workerProcessEnv, spec)
	}
	ctx := context.Background()
	app, err := system.Open(ctx, parts[0], system.Options{Worker: parts[2]})
	if err != nil {
		return err
	}
	defer app.Close()
	sender, err := crm.NewSender(parts[1], nil)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	settled, err := deliverUntilIdle(ctx, app, sender)
	fmt.Println(settled)
	return err
}

// answerAfter is h answering delay after each request arrived (or when h
// is done, if later): a receiver as slow as a remote CRM.
func answerAfter(h http.Handler, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		time.Sleep(delay - time.Since(start))
	})
}

// processCPU is the CPU time this process has taken so far.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkWorkerProcessesSlowReceiver is BenchmarkWorkersSlowReceiver
// as on many machines: W worker processes of the test binary, each with
// its own Outbox (its own pool on PostgreSQL), deliver b.N·W rows over
// HTTP (crm.Sender) to one receiver, crm.Server on the durable CRM file
// in the benchmark's process, which answers 20 ms after each request
// arrives. The clock runs from when every process is ready to when the
// last one is done. Beside the deliveries it reports the CPU time the
// worker processes took (their start included) and the receiver's, a
// delivery, and the workers' share of the machine's processors: where
// the processes stop scaling, those and the database server's share
// show whether the processors are the limit.
//
//	go test ./system -run XXX -bench 'WorkerProcessesSlowReceiver/postgres' -benchtime 300x
func BenchmarkWorkerProcessesSlowReceiver(b *testing.B) {
	const delay = 20 * time.Millisecond
	for _, bk := range []backend{sqliteBackend, postgresBackend} {
		for _, w := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/processes=%d", bk.name, w), func(b *testing.B) {
				apps, c := durableWorkers(b, bk, 1, b.N*w)
				target := apps[0].Path()
				srv, err := crm.NewServer(c, 0)
				if err != nil {
					b.Fatal(err)
				}
				receiver := httptest.NewServer(answerAfter(srv, delay))
				b.Cleanup(receiver.Close)
				type proc struct {
					cmd *exec.Cmd
					in  io.Writer
					out *bufio.Reader
				}
				procs := make([]proc, w)
				for i := range procs {
					cmd := exec.Command(os.Args[0])
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|p%d", workerProcessEnv, target, receiver.URL, i))
					cmd.Stderr = os.Stderr
					in, err := cmd.StdinPipe()
					if err != nil {
						b.Fatal(err)
					}
					out, err := cmd.StdoutPipe()
					if err != nil {
						b.Fatal(err)
					}
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
					procs[i] = proc{cmd, in, bufio.NewReader(out)}
				}
				for i, p := range procs {
					if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
						b.Fatalf("worker process %d: %q, %v", i, line, err)
					}
				}
				b.ResetTimer()
				start, receiverStart := time.Now(), processCPU(b)
				for _, p := range procs {
					io.WriteString(p.in, "go\n")
				}
				settled, cpu := 0, time.Duration(0)
				for i, p := range procs {
					line, err := p.out.ReadString('\n')
					n, perr := strconv.Atoi(strings.TrimSpace(line))
					if err != nil || perr != nil || p.cmd.Wait() != nil {
						b.Fatalf("worker process %d: %q, %v", i, line, err)
					}
					settled += n
					cpu += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
				}
				elapsed, receiverCPU := time.Since(start), processCPU(b)-receiverStart
				if settled != b.N*w {
					b.Fatalf("the processes settled %d rows, want %d", settled, b.N*w)
				}
				perSecond := float64(settled) / elapsed.Seconds()
				b.ReportMetric(perSecond, "deliveries/s")
				b.ReportMetric(100*perSecond/(float64(w)/delay.Seconds()), "%-of-W/20ms")
				b.ReportMetric(float64(cpu.Microseconds())/float64(settled), "worker-CPU-µs/delivery")
				b.ReportMetric(float64(receiverCPU.Microseconds())/float64(settled), "receiver-CPU-µs/delivery")
				b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds()/float64(runtime.NumCPU()), "%-of-CPUs-in-workers")
			})
		}
	}
}
