package compare

import (
	"strconv"
	"strings"
)

// HumanSetting writes a recorded setting ("16384 8kB [configuration
// file]", as pg_settings gives it) in the units people write them in
// ("128MB [configuration file]"). A value it does not understand is
// returned as it is.
func HumanSetting(v string) string {
	val, src, hasSrc := strings.Cut(v, " [")
	num, unit, ok := strings.Cut(val, " ")
	if !ok {
		return v
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return v // -1: disabled, as the server prints it
	}
	var out string
	switch unit {
	case "B", "kB", "8kB", "MB", "16MB":
		scale := map[string]float64{"B": 1, "kB": 1 << 10, "8kB": 8 << 10, "MB": 1 << 20, "16MB": 16 << 20}[unit]
		out = bytesHuman(n * scale)
	case "ms", "s", "min":
		out = durationHuman(n * map[string]float64{"ms": 1, "s": 1000, "min": 60000}[unit])
	default:
		return v
	}
	if hasSrc {
		out += " [" + src
	}
	return out
}

// bytesHuman is the largest of kB, MB, GB, TB that gives a whole number,
// as postgresql.conf is written (128MB, 4GB), else one decimal.
func bytesHuman(b float64) string {
	units := []string{"TB", "GB", "MB", "kB"}
	for i, u := range units {
		size := float64(int64(1) << (10 * (len(units) - i)))
		if b >= size && b == float64(int64(b/size))*size {
			return strconv.FormatInt(int64(b/size), 10) + u
		}
	}
	for i, u := range units {
		size := float64(int64(1) << (10 * (len(units) - i)))
		if b >= size {
			return strconv.FormatFloat(b/size, 'f', 1, 64) + u
		}
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + "B"
}

func durationHuman(ms float64) string {
	for _, u := range []struct {
		name string
		ms   float64
	}{{"h", 3600000}, {"min", 60000}, {"s", 1000}} {
		if ms >= u.ms && ms == float64(int64(ms/u.ms))*u.ms {
			return strconv.FormatInt(int64(ms/u.ms), 10) + u.name
		}
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + "ms"
}
