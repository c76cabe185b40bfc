package result

import (
	"encoding/json"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/ostat"
	"github.com/dbparity/dbparity/internal/metrics"
)

func fp(v float64) *float64 { return &v }

func TestMergeDBIntervals(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b DBInterval
		want DBInterval
	}{
		{"rates weigh by seconds, the WAL file is the later",
			DBInterval{At: 10, Seconds: 1, Commits: fp(100), WALBytes: fp(4000), WALFile: fp(1 << 20), ActiveTime: fp(8)},
			DBInterval{At: 13, Seconds: 3, Commits: fp(200), WALBytes: fp(0), WALFile: fp(2 << 20), ActiveTime: fp(4)},
			DBInterval{At: 13, Seconds: 4, Commits: fp(175), WALBytes: fp(1000), WALFile: fp(2 << 20), ActiveTime: fp(5)}},
		{"a figure absent on either side is absent",
			DBInterval{At: 1, Seconds: 1, Commits: fp(1), Reads: fp(10), WALFile: fp(5)},
			DBInterval{At: 2, Seconds: 1, Commits: fp(3), Writes: fp(10)},
			DBInterval{At: 2, Seconds: 2, Commits: fp(2)}},
		{"two empty intervals keep the later figures",
			DBInterval{At: 1, Commits: fp(1)},
			DBInterval{At: 1, Commits: fp(3)},
			DBInterval{At: 1, Commits: fp(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(MergeDBIntervals(tc.a, tc.b))
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// total is what a series counted: rate × seconds summed over its points.
func dbTotals(s []DBInterval) (secs, commits, wal float64) {
	for _, iv := range s {
		secs += iv.Seconds
		commits += *iv.Commits * iv.Seconds
		wal += *iv.WALBytes * iv.Seconds
	}
	return
}

func osTotals(s []ostat.Rates) (secs, reads, busy, rx float64) {
	for _, r := range s {
		secs += r.IntervalS
		busy += r.CPUBusyPct * r.IntervalS
		for _, d := range r.Disks {
			reads += d.ReadsPerS * r.IntervalS
		}
		for _, n := range r.Nets {
			rx += n.RxMBPerS * r.IntervalS
		}
	}
	return
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A day-long series and then some: a million one-second points keep
// their totals (to float rounding: the means are divided and multiplied
// back) and the series' memory stays within its bound.
func TestBoundedCollectorSeries(t *testing.T) {
	const n = 1_000_000
	db, os := NewDBSeries(0), NewOSSeries(0)
	var rawDB [3]float64
	var rawOS [4]float64
	t0 := time.Unix(1_800_000_000, 0)
	var before runtime.MemStats
	for i := range n {
		if i == 10*metrics.DefaultSeriesPoints {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		secs := 1 + float64(i%3)*0.01 // ticks are never quite a second
		iv := DBInterval{At: float64(i), Seconds: secs, Commits: fp(float64(i % 997)), WALBytes: fp(float64(i%13) * 1e6)}
		db.Add(iv)
		rawDB[0] += secs
		rawDB[1] += *iv.Commits * secs
		rawDB[2] += *iv.WALBytes * secs
		r := ostat.Rates{From: t0.Add(time.Duration(i) * time.Second), To: t0.Add(time.Duration(i+1) * time.Second), IntervalS: secs,
			CPUBusyPct: float64(i % 101), Disks: []ostat.DiskRates{}, Nets: []ostat.NetRates{}}
		if i%5 != 0 { // idle devices are left out of the series
			r.Disks = []ostat.DiskRates{{Name: "vda", ReadsPerS: float64(i % 31)}}
		}
		if i%7 == 0 {
			r.Nets = []ostat.NetRates{{Name: "eth0", RxMBPerS: 1.5}}
		}
		os.Add(r)
		rawOS[0] += secs
		rawOS[1] += float64(len(r.Disks)) * float64(i%31) * secs
		rawOS[2] += r.CPUBusyPct * secs
		rawOS[3] += float64(len(r.Nets)) * 1.5 * secs
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	dbPts, osPts := db.Points(), os.Points()
	if len(dbPts) > metrics.DefaultSeriesPoints+1 || len(osPts) > metrics.DefaultSeriesPoints+1 {
		t.Fatalf("%d database and %d OS points after %d adds", len(dbPts), len(osPts), n)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 2<<20 {
		t.Fatalf("heap grew %d bytes over %d adds", grown, n)
	}
	secs, commits, wal := dbTotals(dbPts)
	if !near(secs, rawDB[0]) || !near(commits, rawDB[1]) || !near(wal, rawDB[2]) {
		t.Fatalf("database totals %v %v %v, want %v", secs, commits, wal, rawDB)
	}
	s, reads, busy, rx := osTotals(osPts)
	if !near(s, rawOS[0]) || !near(reads, rawOS[1]) || !near(busy, rawOS[2]) || !near(rx, rawOS[3]) {
		t.Fatalf("OS totals %v %v %v %v, want %v", s, reads, busy, rx, rawOS)
	}
	if first, last := osPts[0], osPts[len(osPts)-1]; !first.From.Equal(t0) || !last.To.Equal(t0.Add(n*time.Second)) {
		t.Fatalf("OS series covers [%v, %v]", first.From, last.To)
	}
	b, _ := json.Marshal(osPts)
	t.Logf("%d database, %d OS points (step %d s); OS series %d bytes of JSON", len(dbPts), len(osPts), os.Step(), len(b))
}
