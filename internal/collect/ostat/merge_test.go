package ostat

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// snap is a synthetic snapshot secs into a run whose counters grow at the
// rates given by k (k scales every counter's growth, so two intervals can
// differ). The CPU's total time grows by NumCPU × secs exactly, as the
// kernel's does, so that its shares weigh by seconds.
type grower struct {
	s  Snapshot
	at time.Time
}

func newGrower() *grower {
	server := 100.0
	g := &grower{at: time.Unix(1_800_000_000, 0)}
	g.s = Snapshot{At: g.at, NumCPU: 2,
		CPUPressure: &Pressure{Some: PressureLine{Total: 1000}},
		IOPressure:  &Pressure{Some: PressureLine{Total: 2000}, Full: &PressureLine{Total: 500}},
		Disks: map[string]DiskCounters{
			"vda": {Major: 252, ReadIOs: 10, WriteIOs: 10, ReadSectors: 80, WriteSectors: 80, ReadTicks: 5, WriteTicks: 5, IOTicks: 5, WeightedTicks: 10, Fields: 17},
			"vdb": {Major: 252, Minor: 16, ReadIOs: 1, Fields: 17},
		},
		Nets:      map[string]NetCounters{"eth0": {RxBytes: 1 << 20, RxPackets: 100, TxPackets: 50}},
		SelfCPU:   3,
		ServerCPU: &server,
	}
	return g
}

// step advances the snapshot by secs with activity scaled by k and
// returns a copy.
func (g *grower) step(secs, k float64) *Snapshot {
	s := g.s
	u := func(per float64) uint64 { return uint64(math.Round(per * k * secs)) }
	g.at = g.at.Add(time.Duration(secs * float64(time.Second)))
	s.At = g.at
	busy := 0.6 * k / 2 // share of each CPU
	s.CPU.User += 2 * secs * busy * 0.7
	s.CPU.System += 2 * secs * busy * 0.3
	s.CPU.Idle += 2 * secs * (1 - busy)
	s.Interrupts += u(9000)
	s.ContextSwitches += u(40000)
	s.ProcsRunning, s.Load1, s.Load5, s.Load15 = uint64(k*10), k, k/2, k/3
	s.Memory = Memory{Total: 8 << 30, Free: uint64(k * (1 << 30)), Available: uint64(k * (2 << 30)), Cached: uint64(k * (3 << 29))}
	cp, ip := *s.CPUPressure, *s.IOPressure
	ipf := *ip.Full
	cp.Some.Total += u(300000)
	cp.Some.Avg10 = 30 * k
	ip.Some.Total += u(50000)
	ipf.Total += u(20000)
	ipf.Avg10 = 2 * k
	ip.Full = &ipf
	s.CPUPressure, s.IOPressure = &cp, &ip
	disks := map[string]DiskCounters{}
	for name, d := range s.Disks {
		if name == "vda" {
			d.ReadIOs += u(300)
			d.WriteIOs += u(1200)
			d.ReadSectors += u(300 * 16)
			d.WriteSectors += u(1200 * 64)
			d.ReadMerges += u(10)
			d.WriteMerges += u(40)
			d.ReadTicks += u(300 * 0.4)
			d.WriteTicks += u(1200 * 0.9 * k)
			d.IOTicks += u(120)
			d.WeightedTicks += u(800)
			d.DiscardIOs += u(2)
			d.DiscardSectors += u(2 * 8)
			d.FlushIOs += u(330)
		}
		disks[name] = d
	}
	s.Disks = disks
	nets := map[string]NetCounters{}
	for name, n := range s.Nets {
		n.RxBytes += u(3 << 20)
		n.TxBytes += u(1 << 20)
		n.RxPackets += u(5000)
		n.TxPackets += u(4000)
		n.RxDropped += u(1)
		nets[name] = n
	}
	s.Nets = nets
	s.SelfCPU += secs * 0.5 * k
	server := *s.ServerCPU + secs*0.9*k
	s.ServerCPU = &server
	g.s = s
	return &s
}

// TestMergeRatesAsOneInterval checks that merging the rates of [s0, s1]
// and [s1, s2] gives the rates of [s0, s2], figure by figure: every rate
// is a seconds-weighted mean (so totals are kept), every latency an
// IO-weighted one, every reading the later.
func TestMergeRatesAsOneInterval(t *testing.T) {
	for _, tc := range []struct {
		name      string
		secs1, k1 float64
		secs2, k2 float64
	}{
		{"equal", 1, 1, 1, 1},
		{"uneven lengths", 1.013, 1, 0.987, 1},
		{"different load", 1, 0.2, 1, 1.5},
		{"long then short", 64, 1.1, 3, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrower()
			s0 := g.step(0, 0)
			s1 := g.step(tc.secs1, tc.k1)
			s2 := g.step(tc.secs2, tc.k2)
			got := MergeRates(Between(s0, s1), Between(s1, s2))
			want := Between(s0, s2)
			checkClose(t, "", reflect.ValueOf(got), reflect.ValueOf(want))
		})
	}
}

// checkClose compares two values field by field, floats to 1e-9 relative.
func checkClose(t *testing.T, path string, got, want reflect.Value) {
	t.Helper()
	switch got.Kind() {
	case reflect.Pointer:
		if got.IsNil() != want.IsNil() {
			t.Errorf("%s: nil %v, want nil %v", path, got.IsNil(), want.IsNil())
			return
		}
		if !got.IsNil() {
			checkClose(t, path, got.Elem(), want.Elem())
		}
	case reflect.Struct:
		if got.Type() == reflect.TypeOf(time.Time{}) {
			if !got.Interface().(time.Time).Equal(want.Interface().(time.Time)) {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
			return
		}
		for i := range got.NumField() {
			checkClose(t, path+"."+got.Type().Field(i).Name, got.Field(i), want.Field(i))
		}
	case reflect.Slice:
		if got.Len() != want.Len() {
			t.Errorf("%s: %d rows, want %d", path, got.Len(), want.Len())
			return
		}
		for i := range got.Len() {
			checkClose(t, path+"["+string(rune('0'+i))+"]", got.Index(i), want.Index(i))
		}
	case reflect.Float64:
		g, w := got.Float(), want.Float()
		if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("%s: %v, want %v", path, g, w)
		}
	default:
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

func f(v float64) *float64 { return &v }

func TestMergeRatesRules(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	base := func(from, secs float64) Rates {
		return Rates{From: t0.Add(time.Duration(from * float64(time.Second))), To: t0.Add(time.Duration((from + secs) * float64(time.Second))),
			IntervalS: secs, Disks: []DiskRates{}, Nets: []NetRates{}}
	}
	for _, tc := range []struct {
		name  string
		a, b  func(r *Rates)
		check func(t *testing.T, m Rates)
	}{
		{"server CPU known on one side only: absent",
			func(r *Rates) { r.ServerCPUCores, r.ServerCPUPct = f(1), f(50) },
			func(r *Rates) {},
			func(t *testing.T, m Rates) {
				if m.ServerCPUCores != nil || m.ServerCPUPct != nil {
					t.Fatalf("server CPU %v %v, want absent", m.ServerCPUCores, m.ServerCPUPct)
				}
			}},
		{"pressure on one side only: absent",
			func(r *Rates) { r.IOPressure = &PressureRates{SomePct: 4} },
			func(r *Rates) {},
			func(t *testing.T, m Rates) {
				if m.IOPressure != nil {
					t.Fatalf("io pressure %+v, want absent", m.IOPressure)
				}
			}},
		{"full pressure on one side only: absent, some kept",
			func(r *Rates) {
				r.IOPressure = &PressureRates{SomePct: 4, SomeAvg10Pct: 1, FullPct: f(2), FullAvg10Pct: f(1)}
			},
			func(r *Rates) { r.IOPressure = &PressureRates{SomePct: 1, SomeAvg10Pct: 3} },
			func(t *testing.T, m Rates) {
				p := m.IOPressure
				if p == nil || p.FullPct != nil || p.FullAvg10Pct != nil || p.SomePct != 1.75 || p.SomeAvg10Pct != 3 {
					t.Fatalf("io pressure %+v, want some 1.75%% (4%% for 1 s, 1%% for 3 s; avg10 3), no full", p)
				}
			}},
		{"readings are the later",
			func(r *Rates) { r.Load1, r.MemUsedMB, r.ProcsBlocked, r.NumCPU = 9, 100, 7, 2 },
			func(r *Rates) { r.Load1, r.MemUsedMB, r.ProcsBlocked, r.NumCPU = 1, 200, 0, 4 },
			func(t *testing.T, m Rates) {
				if m.Load1 != 1 || m.MemUsedMB != 200 || m.ProcsBlocked != 0 || m.NumCPU != 4 {
					t.Fatalf("load %v mem %v blocked %v cpus %v, want b's", m.Load1, m.MemUsedMB, m.ProcsBlocked, m.NumCPU)
				}
			}},
		{"a disk idle on one side keeps its total",
			func(r *Rates) {
				r.Disks = []DiskRates{{Name: "vdb", ReadsPerS: 10, RAwaitMs: 2, AwaitMs: 2, UtilPct: 30, FlushesPerS: f(4)}}
			},
			func(r *Rates) {
				r.Disks = []DiskRates{{Name: "vda", WritesPerS: 100, WAwaitMs: 1, AwaitMs: 1, FlushesPerS: f(8)}}
			},
			func(t *testing.T, m Rates) {
				// a is 1 s, b is 3 s.
				want := []DiskRates{
					{Name: "vda", WritesPerS: 75, WAwaitMs: 1, AwaitMs: 1, FlushesPerS: f(6)},
					{Name: "vdb", ReadsPerS: 2.5, RAwaitMs: 2, AwaitMs: 2, UtilPct: 7.5, FlushesPerS: f(1)},
				}
				if !reflect.DeepEqual(m.Disks, want) {
					t.Fatalf("disks %+v, want %+v", m.Disks, want)
				}
			}},
		{"await weighs by IOs, not seconds",
			func(r *Rates) { r.Disks = []DiskRates{{Name: "vda", ReadsPerS: 100, RAwaitMs: 1, AwaitMs: 1}} },
			func(r *Rates) { r.Disks = []DiskRates{{Name: "vda", ReadsPerS: 1, RAwaitMs: 101, AwaitMs: 101}} },
			func(t *testing.T, m Rates) {
				// 100 IOs at 1 ms and 3 at 101 ms: 403 ms over 103 IOs.
				if d := m.Disks[0]; math.Abs(d.RAwaitMs-403.0/103) > 1e-12 || d.AwaitMs != d.RAwaitMs || d.WAwaitMs != 0 {
					t.Fatalf("await %v r_await %v w_await %v, want 403/103", d.AwaitMs, d.RAwaitMs, d.WAwaitMs)
				}
			}},
		{"an interface on one side only keeps its total",
			func(r *Rates) { r.Nets = []NetRates{{Name: "eth0", RxPacketsPerS: 400, TxMBPerS: 4}} },
			func(r *Rates) {},
			func(t *testing.T, m Rates) {
				if want := []NetRates{{Name: "eth0", RxPacketsPerS: 100, TxMBPerS: 1}}; !reflect.DeepEqual(m.Nets, want) {
					t.Fatalf("nets %+v, want %+v", m.Nets, want)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(0, 1), base(1, 3)
			tc.a(&a)
			tc.b(&b)
			m := MergeRates(a, b)
			if !m.From.Equal(a.From) || !m.To.Equal(b.To) || m.IntervalS != 4 {
				t.Fatalf("merged [%v, %v] %v s, want [%v, %v] 4 s", m.From, m.To, m.IntervalS, a.From, b.To)
			}
			tc.check(t, m)
		})
	}
}

// Two empty intervals (a clock that did not move) merge into the later
// figures, never NaN.
func TestMergeRatesEmpty(t *testing.T) {
	a := Rates{CPUBusyPct: 10, ServerCPUCores: f(1), Disks: []DiskRates{{Name: "vda", ReadsPerS: 3, RAwaitMs: 1}}}
	b := Rates{CPUBusyPct: 20, ServerCPUCores: f(2), Disks: []DiskRates{{Name: "vda", ReadsPerS: 4, RAwaitMs: 2}}}
	m := MergeRates(a, b)
	if m.CPUBusyPct != 20 || *m.ServerCPUCores != 2 || m.Disks[0].ReadsPerS != 4 || m.Disks[0].RAwaitMs != 2 {
		t.Fatalf("%+v, want b's figures", m)
	}
}
