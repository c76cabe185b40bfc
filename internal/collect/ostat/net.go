package ostat

import (
	"cmp"
	"fmt"
	"slices"
)

// NetCounters is one interface of /proc/net/dev.
type NetCounters struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	RxErrors  uint64 `json:"rx_errors"`
	RxDropped uint64 `json:"rx_dropped"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxErrors  uint64 `json:"tx_errors"`
	TxDropped uint64 `json:"tx_dropped"`
}

func (r *Reader) readNets(s *Snapshot) error {
	nd, err := r.fs.NetDev()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("net/dev"), err)
	}
	s.Nets = make(map[string]NetCounters, len(nd))
	for name, l := range nd {
		s.Nets[name] = NetCounters{
			RxBytes: l.RxBytes, RxPackets: l.RxPackets, RxErrors: l.RxErrors, RxDropped: l.RxDropped,
			TxBytes: l.TxBytes, TxPackets: l.TxPackets, TxErrors: l.TxErrors, TxDropped: l.TxDropped,
		}
	}
	return nil
}

// NetRates is one network interface over an interval.
type NetRates struct {
	Name          string  `json:"name"`
	RxPacketsPerS float64 `json:"rx_packets_per_s"`
	TxPacketsPerS float64 `json:"tx_packets_per_s"`
	RxMBPerS      float64 `json:"rx_mb_per_s"`
	TxMBPerS      float64 `json:"tx_mb_per_s"`
	RxErrorsPerS  float64 `json:"rx_errors_per_s"`
	TxErrorsPerS  float64 `json:"tx_errors_per_s"`
	RxDroppedPerS float64 `json:"rx_dropped_per_s"`
	TxDroppedPerS float64 `json:"tx_dropped_per_s"`
}

// netsBetween skips an interface missing from either snapshot or whose
// counters went backwards: it was deleted and re-created under the same
// name (a container's veth, a bond rebuilt), so the interval has no base.
func netsBetween(a, b map[string]NetCounters, secs float64) []NetRates {
	out := make([]NetRates, 0, len(b))
	for name, nb := range b {
		na, ok := a[name]
		if !ok {
			continue
		}
		var d [8]uint64
		okAll := true
		for i, pair := range [8][2]uint64{
			{na.RxPackets, nb.RxPackets}, {na.TxPackets, nb.TxPackets},
			{na.RxBytes, nb.RxBytes}, {na.TxBytes, nb.TxBytes},
			{na.RxErrors, nb.RxErrors}, {na.TxErrors, nb.TxErrors},
			{na.RxDropped, nb.RxDropped}, {na.TxDropped, nb.TxDropped},
		} {
			var ok bool
			d[i], ok = counterDelta(pair[0], pair[1])
			okAll = okAll && ok
		}
		if !okAll {
			continue
		}
		out = append(out, NetRates{
			Name:          name,
			RxPacketsPerS: per(float64(d[0]), secs),
			TxPacketsPerS: per(float64(d[1]), secs),
			RxMBPerS:      per(float64(d[2])/mb, secs),
			TxMBPerS:      per(float64(d[3])/mb, secs),
			RxErrorsPerS:  per(float64(d[4]), secs),
			TxErrorsPerS:  per(float64(d[5]), secs),
			RxDroppedPerS: per(float64(d[6]), secs),
			TxDroppedPerS: per(float64(d[7]), secs),
		})
	}
	slices.SortFunc(out, func(x, y NetRates) int { return cmp.Compare(x.Name, y.Name) })
	return out
}
