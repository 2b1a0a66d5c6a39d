package lanes

import (
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

// cpuSet is the kernel's cpu_set_t: a bit for each of 1024 processors.
type cpuSet [1024 / 64]uint64

// affinity is the calling thread's set of processors it may run on.
func affinity() (cpuSet, error) {
	var s cpuSet
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); e != 0 {
		return s, e
	}
	return s, nil
}

// setAffinity sets the calling thread's set of processors.
func setAffinity(s cpuSet) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); e != 0 {
		return e
	}
	return nil
}

// laneCPUs returns the processor each of n lanes keeps to: the processors
// this process may run on, one to a lane, when there are n of them; nil
// otherwise (fewer lanes leave the kernel to find idle processors, more
// to share them out).
func laneCPUs(n int) []int {
	s, err := affinity()
	if cpus := s.processors(); err == nil && len(cpus) == n {
		return cpus
	}
	return nil
}

// processors lists the processors in s, in increasing order.
func (s cpuSet) processors() []int {
	var cpus []int
	for i := range len(s) * 64 {
		if s[i/64]&(1<<(i%64)) != 0 {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// startOn starts cmd on processor cpu alone, if cpu is not negative: the
// thread that starts it keeps to cpu meanwhile, and a process inherits
// the set of the thread that forks it, as do the threads it makes. If
// the set cannot be changed, cmd starts as it would have.
func startOn(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	was, err := affinity()
	var one cpuSet
	one[cpu/64] = 1 << (cpu % 64)
	if err != nil || setAffinity(one) != nil {
		runtime.UnlockOSThread()
		return cmd.Start()
	}
	err = cmd.Start()
	if setAffinity(was) == nil {
		// Otherwise the thread stays this goroutine's alone, and no other
		// goroutine keeps to cpu.
		runtime.UnlockOSThread()
	}
	return err
}
