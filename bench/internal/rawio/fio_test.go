package rawio

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseFio(t *testing.T) {
	f, err := os.Open("testdata/fio-3-randread.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := parseFio(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{
		IOPS:       25120.887911,
		MBps:       200967 * 1024 / 1e6,
		Reads:      251234,
		Elapsed:    10001 * time.Millisecond,
		LatencyP50: 150528 * time.Nanosecond,
		LatencyP99: 419840 * time.Nanosecond,
		LatencyMax: 2613248 * time.Nanosecond,
	}
	if r != want {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
}

func TestParseFioJobs(t *testing.T) {
	const job = `{"jobname":"j","error":0,"read":{"bw":%d,"iops":%d,"runtime":%d,"total_ios":%d,
		"clat_ns":{"max":%d,"percentile":{"50.000000":%d,"99.000000":%d}}}}`
	two := `{"fio version":"fio-3.28","jobs":[` +
		fmt.Sprintf(job, 800, 100, 1000, 100, 900, 100, 500) + `,` +
		fmt.Sprintf(job, 1600, 200, 999, 200, 700, 200, 400) + `]}`
	r, err := parseFio(strings.NewReader(two))
	if err != nil {
		t.Fatal(err)
	}
	if r.Reads != 300 || r.IOPS != 300 || r.MBps != 2400*1024/1e6 || r.Elapsed != time.Second ||
		r.LatencyP50 != 200 || r.LatencyP99 != 500 || r.LatencyMax != 900 || !strings.Contains(r.Note, "worst of 2") {
		t.Errorf("two jobs: %+v", r)
	}

	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no JSON"},
		{"truncated", `{"jobs":[{"jobname":"j"`, "unexpected end"},
		{"no jobs", `{"fio version":"fio-3.36","jobs":[]}`, "no jobs"},
		{"job error", `{"jobs":[{"jobname":"j","error":22}]}`, "job j failed with error 22"},
		{"no reads", `{"jobs":[{"jobname":"j","read":{"total_ios":0,"runtime":0}}]}`, "no reads"},
		{"no percentiles", `{"jobs":[{"jobname":"j","read":{"total_ios":5,"runtime":10,"clat_ns":{"max":1}}}]}`, "no 50th or 99th percentile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFio(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseFio(f *testing.F) {
	sample, err := os.ReadFile("testdata/fio-3-randread.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add([]byte(`{"jobs":[{"jobname":"j","read":{"total_ios":5,"runtime":10,"clat_ns":{"max":1,"percentile":{"50.000000":1,"99.000000":1}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseFio(strings.NewReader(string(b)))
		if err == nil && (r.Reads <= 0 || r.Elapsed <= 0) {
			t.Errorf("accepted output without reads: %+v", r)
		}
	})
}
