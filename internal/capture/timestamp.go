package capture

import (
	"strconv"
	"strings"
	"time"
)

// clock reads the server's timestamps: "2024-05-20 10:00:00.123 UTC" (%m,
// csvlog, jsonlog), the same without milliseconds (%t) and Unix epochs
// (%n). It remembers zones, and which abbreviations it could not place.
type clock struct {
	zones   map[string]*time.Location
	unknown map[string]bool // abbreviations read as UTC
}

func newClock() *clock {
	return &clock{zones: map[string]*time.Location{}, unknown: map[string]bool{}}
}

// parse reads a timestamp; zone abbreviations other than UTC and GMT do not
// name one offset (CST is three), so they are read as UTC and remembered:
// times stay consistent within the log except across a daylight-saving
// change. ServerSettings asks for log_timezone = 'UTC'.
func (c *clock) parse(s string) (time.Time, bool) {
	if len(s) < 19 {
		return time.Time{}, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			ch := s[i]
			if ch < '0' || ch > '9' {
				return -1
			}
			n = n*10 + int(ch-'0')
		}
		return n
	}
	if s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 60 {
		return time.Time{}, false
	}
	rest := s[19:]
	nsec := 0
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		frac := rest[1:i]
		if frac == "" || len(frac) > 9 {
			return time.Time{}, false
		}
		n, _ := strconv.Atoi(frac)
		for k := len(frac); k < 9; k++ {
			n *= 10
		}
		nsec = n
		rest = rest[i:]
	}
	loc := time.UTC
	if rest != "" {
		zone, ok := strings.CutPrefix(rest, " ")
		if !ok {
			return time.Time{}, false
		}
		if loc, ok = c.zone(zone); !ok {
			return time.Time{}, false
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc), true
}

func (c *clock) zone(z string) (*time.Location, bool) {
	if loc, ok := c.zones[z]; ok {
		return loc, true
	}
	if z == "" || strings.ContainsAny(z, " \t\n") || len(z) > 32 {
		return nil, false
	}
	loc := time.UTC
	switch {
	case z == "UTC" || z == "GMT" || z == "UCT" || z == "Z":
	case z[0] == '+' || z[0] == '-':
		// Numeric zones as the server prints them: +03, -0330, +05:30.
		digits := strings.ReplaceAll(z[1:], ":", "")
		if len(digits) != 2 && len(digits) != 4 && len(digits) != 6 {
			return nil, false
		}
		h, err1 := strconv.Atoi(digits[:2])
		m, s := 0, 0
		var err2, err3 error
		if len(digits) >= 4 {
			m, err2 = strconv.Atoi(digits[2:4])
		}
		if len(digits) == 6 {
			s, err3 = strconv.Atoi(digits[4:6])
		}
		if err1 != nil || err2 != nil || err3 != nil || h > 15 || m > 59 || s > 59 {
			return nil, false
		}
		off := h*3600 + m*60 + s
		if z[0] == '-' {
			off = -off
		}
		loc = time.FixedZone(z, off)
	default:
		for _, r := range z {
			if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
				return nil, false
			}
		}
		c.unknown[z] = true
	}
	c.zones[z] = loc
	return loc, true
}

// epoch reads %n: seconds since 1970 with milliseconds.
func epoch(s string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	if sec == "" || strings.Trim(sec, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || len(frac) > 9 || len(sec) > 12 {
		return time.Time{}, false
	}
	n, _ := strconv.ParseInt(sec, 10, 64)
	ns := 0
	if frac != "" {
		v, _ := strconv.Atoi(frac)
		for k := len(frac); k < 9; k++ {
			v *= 10
		}
		ns = v
	}
	return time.Unix(n, int64(ns)).UTC(), true
}
