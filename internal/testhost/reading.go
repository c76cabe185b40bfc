package testhost

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Reading is the host as its own processes see it: what the agent reads
// in its namespaces' /proc, which is the database host's view.
type Reading struct {
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
	Hostname string    `json:"hostname"` // its UTS namespace's
	Kernel   string    `json:"kernel"`   // uname's release: one kernel serves every namespace
	// Nets are the network namespace's interfaces (/proc/net/dev): lo
	// and eth0, the host's end of the veth pair.
	Nets map[string]NetCounters `json:"nets"`
	// ContextSwitches is /proc/stat's ctxt: a count of the whole
	// kernel's, which no namespace divides.
	ContextSwitches uint64 `json:"context_switches"`
	// ServerCPUS is the CPU time of the server's processes (PostgreSQL's
	// postgres processes, MariaDB's mariadbd), user and system, with the
	// children they reaped, in seconds; ServerProcs how many run.
	ServerCPUS  float64 `json:"server_cpu_s"`
	ServerProcs int     `json:"server_procs"`
	// ServerCPUsAllowed is the server's main process's Cpus_allowed_list.
	ServerCPUsAllowed string `json:"server_cpus_allowed"`
	// RelayUp and RelayDown are the payload bytes the relay passed to
	// the server and back.
	RelayUp   uint64 `json:"relay_up"`
	RelayDown uint64 `json:"relay_down"`
}

// NetCounters are one interface's cumulative counters.
type NetCounters struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
}

// readNetDev parses a /proc/net/dev file.
func readNetDev(path string) (map[string]NetCounters, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]NetCounters{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v := strings.Fields(rest)
		if len(v) < 16 {
			continue
		}
		n := func(i int) uint64 { x, _ := strconv.ParseUint(v[i], 10, 64); return x }
		out[strings.TrimSpace(name)] = NetCounters{RxBytes: n(0), RxPackets: n(1), TxBytes: n(8), TxPackets: n(9)}
	}
	return out, sc.Err()
}

// readCtxt reads /proc/stat's context switches.
func readCtxt(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ctxt "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no ctxt line", path)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture Go runs on).
const clockTicks = 100

// serverCPU sums utime, stime, cutime and cstime over the processes
// under proc named comm: a server's processes reap only each other, so
// each process's time counts once, while it runs in its own fields and
// after it ended in its parent's. A process that exited between the
// listing and the reading of its stat file, its parent's line read
// before, would be in neither: such a reading is taken again, up to
// three times (its parent has reaped it by then).
func serverCPU(proc, comm string) (secs float64, procs int) {
	for range 3 {
		var vanished int
		if secs, procs, vanished = serverCPUOnce(proc, comm); vanished == 0 {
			break
		}
	}
	return secs, procs
}

func serverCPUOnce(proc, comm string) (secs float64, procs, vanished int) {
	ents, _ := os.ReadDir(proc)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			vanished++
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != comm {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 15 {
			continue
		}
		var ticks uint64
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			x, _ := strconv.ParseUint(f[i], 10, 64)
			ticks += x
		}
		secs += float64(ticks) / clockTicks
		procs++
	}
	return secs, procs, vanished
}

// statusField is one field of a /proc/PID/status file.
func statusField(path, name string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Readings are a host's readings in time order (Host.Record).
type Readings []Reading

// Delta is what changed on the host over an interval.
type Delta struct {
	Seconds         float64
	Nets            map[string]NetDelta
	ContextSwitches float64
	ServerCPUS      float64
	RelayUp         float64
	RelayDown       float64
}

// NetDelta is one interface's traffic over an interval.
type NetDelta struct{ RxBytes, RxPackets, TxBytes, TxPackets float64 }

// Between is the change from from to to, each counter taken linearly
// between the readings on either side of the instant; false when the
// readings do not span [from, to].
func (rs Readings) Between(from, to time.Time) (Delta, bool) {
	a, okA := rs.at(from)
	b, okB := rs.at(to)
	if !okA || !okB {
		return Delta{}, false
	}
	d := Delta{Seconds: to.Sub(from).Seconds(), Nets: map[string]NetDelta{},
		ContextSwitches: b.ctxt - a.ctxt, ServerCPUS: b.cpu - a.cpu, RelayUp: b.up - a.up, RelayDown: b.down - a.down}
	for name, nb := range b.nets {
		if na, ok := a.nets[name]; ok {
			d.Nets[name] = NetDelta{nb.RxBytes - na.RxBytes, nb.RxPackets - na.RxPackets, nb.TxBytes - na.TxBytes, nb.TxPackets - na.TxPackets}
		}
	}
	return d, true
}

// point is a reading's counters as numbers, interpolated.
type point struct {
	ctxt, cpu, up, down float64
	nets                map[string]NetDelta
}

func (r Reading) point() point {
	p := point{ctxt: float64(r.ContextSwitches), cpu: r.ServerCPUS, up: float64(r.RelayUp), down: float64(r.RelayDown), nets: map[string]NetDelta{}}
	for n, c := range r.Nets {
		p.nets[n] = NetDelta{float64(c.RxBytes), float64(c.RxPackets), float64(c.TxBytes), float64(c.TxPackets)}
	}
	return p
}

func (rs Readings) at(t time.Time) (point, bool) {
	for i := 1; i < len(rs); i++ {
		a, b := rs[i-1], rs[i]
		if t.Before(a.At) || t.After(b.At) {
			continue
		}
		span := b.At.Sub(a.At).Seconds()
		f := 0.0
		if span > 0 {
			f = t.Sub(a.At).Seconds() / span
		}
		pa, pb := a.point(), b.point()
		lerp := func(x, y float64) float64 { return x + f*(y-x) }
		p := point{ctxt: lerp(pa.ctxt, pb.ctxt), cpu: lerp(pa.cpu, pb.cpu), up: lerp(pa.up, pb.up), down: lerp(pa.down, pb.down), nets: map[string]NetDelta{}}
		for n, x := range pa.nets {
			if y, ok := pb.nets[n]; ok {
				p.nets[n] = NetDelta{lerp(x.RxBytes, y.RxBytes), lerp(x.RxPackets, y.RxPackets), lerp(x.TxBytes, y.TxBytes), lerp(x.TxPackets, y.TxPackets)}
			}
		}
		return p, true
	}
	return point{}, false
}
