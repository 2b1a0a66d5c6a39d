package system_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// workerProcessEnv, set in a process of the test binary, makes it a
// worker process of BenchmarkWorkerProcessesSlowReceiver (see TestMain):
// "APP|CRM|NAME|DELAY", the app database, the CRM file, the worker's
// name and the receiver's delay.
const workerProcessEnv = "HANDOFF_BENCH_WORKER"

// runWorkerProcess is a worker process: it opens its Outbox and the CRM,
// says "ready", waits for a line on its standard input, then delivers
// through a Pipeline against a receiver that answers after the delay
// until nothing is eligible, and prints how many rows it settled.
func runWorkerProcess(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		return fmt.Errorf("%s=%q: want APP|CRM|NAME|DELAY", workerProcessEnv, spec)
	}
	delay, err := time.ParseDuration(parts[3])
	if err != nil {
		return err
	}
	ctx := context.Background()
	app, err := system.Open(ctx, parts[0], system.Options{Worker: parts[2]})
	if err != nil {
		return err
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, parts[1], system.Durable)
	if err != nil {
		return err
	}
	defer crm.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	settled, err := deliverUntilIdle(ctx, app, slowReceiver{crm, delay})
	fmt.Println(settled)
	return err
}

// BenchmarkWorkerProcessesSlowReceiver is BenchmarkWorkersSlowReceiver
// with every worker a process of its own, as on many machines: W
// processes of the test binary, each with its own Outbox (its own pool
// on PostgreSQL) and its own handle on the durable CRM file, deliver
// b.N·W rows against a receiver that answers after 20 ms. The clock
// runs from when every process is ready to when the last one is done.
// Beside the deliveries it reports the CPU time the worker processes
// took, their start included, a delivery and as a share of the
// machine's processors: where the processes stop scaling, that share
// and the database server's own show whether the processors are the
// limit.
func BenchmarkWorkerProcessesSlowReceiver(b *testing.B) {
	const delay = 20 * time.Millisecond
	for _, bk := range []backend{sqliteBackend, postgresBackend} {
		for _, w := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/processes=%d", bk.name, w), func(b *testing.B) {
				apps, _ := durableWorkers(b, bk, 1, b.N*w)
				target := apps[0].Path()
				crmPath := filepath.Join(b.TempDir(), "crm.db")
				crm, err := system.OpenCRM(context.Background(), crmPath, system.Durable)
				if err != nil {
					b.Fatal(err)
				}
				crm.Close()
				type proc struct {
					cmd *exec.Cmd
					in  io.Writer
					out *bufio.Reader
				}
				procs := make([]proc, w)
				for i := range procs {
					cmd := exec.Command(os.Args[0])
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|p%d|%s", workerProcessEnv, target, crmPath, i, delay))
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
				start := time.Now()
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
				elapsed := time.Since(start)
				if settled != b.N*w {
					b.Fatalf("the processes settled %d rows, want %d", settled, b.N*w)
				}
				perSecond := float64(settled) / elapsed.Seconds()
				b.ReportMetric(perSecond, "deliveries/s")
				b.ReportMetric(100*perSecond/(float64(w)/delay.Seconds()), "%-of-W/20ms")
				b.ReportMetric(float64(cpu.Microseconds())/float64(settled), "worker-CPU-µs/delivery")
				b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds()/float64(runtime.NumCPU()), "%-of-CPUs-in-workers")
			})
		}
	}
}
