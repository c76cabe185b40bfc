// Package ostat reads the operating system's cumulative counters from /proc
// (CPU time, interrupts, context switches, block devices, network
// interfaces, pressure stall information, process CPU) and derives
// per-second rates between two snapshots. It never writes anything and
// knows nothing of databases: the caller says which process tree is "the
// server" by its root PID.
//
// A Snapshot keeps raw cumulative values only, so rates over any interval,
// regular or not, a one-second step or a whole measured window, come from
// the same subtraction in Between. Parsing is left to
// github.com/prometheus/procfs, the library of record for /proc.
//
// Units: a MB is 2^20 bytes, as iostat -m and free -m count it; CPU time
// is in seconds; "cores" are CPU-seconds per second.
package ostat

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// Options says where to read from and which process tree is the server.
type Options struct {
	// ProcRoot is where proc is mounted; default "/proc". Tests point it at
	// a recorded tree under testdata.
	ProcRoot string
	// ServerPID, when > 0, is the root process of a database server on
	// this host. Its CPU and that of all its descendants is summed as the
	// server's CPU (see serverCPU for how exited children stay counted).
	ServerPID int
	// Foreign says ProcRoot is another host's /proc (a copy of its files,
	// see package hostfs): no process of ours is in it, so there is no
	// self CPU, and ServerPID is a PID of that host.
	Foreign bool
}

// Reader reads snapshots. It keeps nothing from one Read to the next, so
// it is safe for concurrent use and a missed or late Read costs nothing
// but resolution.
type Reader struct {
	opts Options
	fs   procfs.FS
	bfs  blockdevice.FS
	self procfs.Proc
	// psi is false when the kernel has no /proc/pressure (before 4.20, or
	// booted with psi=0), so the three files are not tried every second.
	psi bool
	// schedstat is false when the kernel has no /proc/schedstat (built
	// without CONFIG_SCHEDSTATS); per-process schedstat may still exist.
	schedstat bool
	// beforeStat, when set (tests), is called before each process's
	// stat line is read by serverCPU: where a process exits mid-reading.
	beforeStat func(pid int)
}

// New checks that ProcRoot is readable and, when ServerPID is set, that the
// server process exists now; a typo in the PID would otherwise only show
// as a run without server CPU.
func New(o Options) (*Reader, error) {
	if o.ProcRoot == "" {
		o.ProcRoot = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(o.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", o.ProcRoot, err)
	}
	// blockdevice insists on a sysfs root, but ProcDiskstats, the only
	// method used here, never reads it; handing it the proc root keeps a
	// host or container without /sys working.
	bfs, err := blockdevice.NewFS(o.ProcRoot, o.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", o.ProcRoot, err)
	}
	r := &Reader{opts: o, fs: fs, bfs: bfs}
	if !o.Foreign {
		if r.self, err = fs.Self(); err != nil {
			return nil, fmt.Errorf("read %s: %w", r.path("self"), err)
		}
	}
	if _, err := os.Stat(r.path("pressure")); err == nil {
		r.psi = true
	}
	if _, err := os.Stat(r.path("schedstat")); err == nil {
		r.schedstat = true
	}
	if o.ServerPID > 0 {
		if !o.Foreign && r.self.PID == o.ServerPID {
			return nil, fmt.Errorf("server pid %d is this process; give the database server's pid", o.ServerPID)
		}
		if _, err := fs.Proc(o.ServerPID); err != nil {
			return nil, fmt.Errorf("server pid %d: %w", o.ServerPID, err)
		}
	}
	return r, nil
}

// Snapshot is one reading of the cumulative counters. Fields that are
// pointers are nil when the source does not exist on this host.
type Snapshot struct {
	// At is the middle of the read, so that the error from the read taking
	// time is split evenly between the interval before and after.
	At time.Time `json:"at"`

	// NumCPU is the number of CPUs in /proc/stat (the online ones).
	NumCPU int      `json:"num_cpu"`
	CPU    CPUTimes `json:"cpu"`
	// Interrupts and ContextSwitches are the "intr" total and "ctxt"
	// counters of /proc/stat since boot.
	Interrupts      uint64 `json:"interrupts"`
	ContextSwitches uint64 `json:"context_switches"`
	// ProcsRunning and ProcsBlocked are instantaneous.
	ProcsRunning uint64 `json:"procs_running"`
	ProcsBlocked uint64 `json:"procs_blocked"`

	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`

	// RunDelay is the time tasks spent runnable but waiting for a CPU,
	// summed over all CPUs since boot, in seconds (/proc/schedstat); nil
	// where the kernel does not keep it.
	RunDelay *float64 `json:"run_delay_s,omitempty"`

	CPUPressure    *Pressure `json:"cpu_pressure,omitempty"`
	IOPressure     *Pressure `json:"io_pressure,omitempty"`
	MemoryPressure *Pressure `json:"memory_pressure,omitempty"`

	// Disks are whole block devices by name; see keepDisk for which.
	Disks map[string]DiskCounters `json:"disks"`
	// Nets are all network interfaces of /proc/net/dev by name, lo too.
	Nets   map[string]NetCounters `json:"nets"`
	Memory Memory                 `json:"memory"`
	// VM is nil where /proc/vmstat is missing.
	VM *VMStat `json:"vmstat,omitempty"`

	// SelfCPU is the user+system CPU time of the process that called New
	// (the driver), all its threads but not its children, in seconds.
	SelfCPU float64 `json:"self_cpu_s"`
	// ServerCPU is the CPU time of the server's tree in seconds; nil when
	// no ServerPID was given or the server process is gone.
	ServerCPU *float64 `json:"server_cpu_s,omitempty"`
	// ServerProcs is how many live processes the server tree had.
	ServerProcs int `json:"server_procs,omitempty"`
	// ServerRunDelay is each server process's time waiting for a CPU
	// since it started, in seconds, by PID (/proc/PID/schedstat): what
	// the platform's scheduler cost the database. Nil without a server or
	// where the kernel does not keep it.
	ServerRunDelay map[int]float64 `json:"server_run_delay_s,omitempty"`
}

// Read takes one snapshot. A missing optional source (pressure, the
// server process) leaves its fields nil; a failure to read a source every
// Linux has is an error.
func (r *Reader) Read() (*Snapshot, error) {
	start := time.Now()
	s := &Snapshot{}
	for _, src := range [...]struct {
		file string
		read func(*Snapshot) error
	}{
		{"stat", r.readStat},
		{"loadavg", r.readLoad},
		{"schedstat", r.readSchedstat},
		{"pressure", r.readPressure},
		{"diskstats", r.readDisks},
		{"net/dev", r.readNets},
		{"meminfo", r.readMemory},
		{"vmstat", r.readVMStat},
		{"*/stat", r.readProcesses},
	} {
		if err := r.guard(src.file, src.read, s); err != nil {
			return nil, err
		}
	}
	s.At = start.Add(time.Since(start) / 2)
	return s, nil
}

// guard turns a panic while reading file into an error. procfs indexes
// some fields without checking that the line has them (a short
// /proc/net/dev line, a /proc/PID/stat cut after the command name), and
// the collector runs beside a benchmark, which a malformed file must not
// bring down.
func (r *Reader) guard(file string, read func(*Snapshot) error, s *Snapshot) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s: malformed: %v", r.path(file), p)
		}
	}()
	return read(s)
}

func (r *Reader) path(name string) string {
	return filepath.Join(r.opts.ProcRoot, name)
}

func (r *Reader) readLoad(s *Snapshot) error {
	l, err := r.fs.LoadAvg()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("loadavg"), err)
	}
	s.Load1, s.Load5, s.Load15 = l.Load1, l.Load5, l.Load15
	return nil
}
