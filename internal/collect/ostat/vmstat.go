package ostat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// VMStat is the part of /proc/vmstat that shows memory pressure reaching
// the database: major page faults and swapping, cumulative counts.
type VMStat struct {
	MajorFaults uint64 `json:"pgmajfault"`
	SwapIn      uint64 `json:"pswpin"`  // pages
	SwapOut     uint64 `json:"pswpout"` // pages
}

// readVMStat parses /proc/vmstat's "name value" lines (procfs has no
// parser for this file). A kernel without it leaves VM nil.
func (r *Reader) readVMStat(s *Snapshot) error {
	b, err := os.ReadFile(r.path("vmstat"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("vmstat"), err)
	}
	v := &VMStat{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "pgmajfault":
			dst = &v.MajorFaults
		case "pswpin":
			dst = &v.SwapIn
		case "pswpout":
			dst = &v.SwapOut
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(string(bytes.TrimSpace(val)), 10, 64); err != nil {
			return fmt.Errorf("read %s: %s: %w", r.path("vmstat"), name, err)
		}
	}
	s.VM = v
	return nil
}

// vmBetween sets the paging rates of r; they stay nil without readings.
func vmBetween(r *Rates, a, b *VMStat, secs float64) {
	if a == nil || b == nil {
		return
	}
	rate := func(x, y uint64) *float64 {
		d, _ := counterDelta(x, y)
		v := per(float64(d), secs)
		return &v
	}
	r.MajorFaultsPerS = rate(a.MajorFaults, b.MajorFaults)
	r.SwapInPagesPerS = rate(a.SwapIn, b.SwapIn)
	r.SwapOutPagesPerS = rate(a.SwapOut, b.SwapOut)
}
