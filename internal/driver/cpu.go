package driver

import (
	"syscall"
	"time"
)

// CPU is user and system CPU time of this process.
type CPU struct{ User, Sys time.Duration }

// Total is user plus system time.
func (c CPU) Total() time.Duration { return c.User + c.Sys }

// ProcessCPU is the CPU this process has used so far (getrusage).
func ProcessCPU() CPU {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return CPU{}
	}
	return CPU{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano())}
}

// Sub is the CPU used between o and c.
func (c CPU) Sub(o CPU) CPU { return CPU{User: c.User - o.User, Sys: c.Sys - o.Sys} }
