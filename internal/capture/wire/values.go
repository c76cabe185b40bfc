package wire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Type OIDs whose binary form value decodes.
const (
	oidBool        = 16
	oidBytea       = 17
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidUUID        = 2950
	oidJSON        = 114
	oidJSONB       = 3802
	oidTime        = 1083
	oidInterval    = 1186
	oidNumeric     = 1700
)

// pgEpoch is where PostgreSQL's binary dates and times count from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// value is a bound parameter as text, as the server would print it: a text
// parameter as it is, a binary one decoded by its declared type; false
// when the type's binary form is not decoded here.
func value(raw []byte, format uint16, typ uint32) (string, bool) {
	if format == 0 {
		return string(raw), true
	}
	switch typ {
	case oidText, oidVarchar, oidBPChar, oidName, oidJSON:
		return string(raw), true
	case oidJSONB:
		if len(raw) >= 1 && raw[0] == 1 { // version 1: the text follows
			return string(raw[1:]), true
		}
	case oidNumeric:
		return numeric(raw)
	case oidTime:
		if len(raw) == 8 {
			us := int64(binary.BigEndian.Uint64(raw))
			return time.Time{}.Add(time.Duration(us) * time.Microsecond).Format("15:04:05.999999"), true
		}
	case oidInterval:
		if len(raw) == 16 {
			us := int64(binary.BigEndian.Uint64(raw))
			days, months := int32(binary.BigEndian.Uint32(raw[8:])), int32(binary.BigEndian.Uint32(raw[12:]))
			return fmt.Sprintf("%d mons %d days %d microseconds", months, days, us), true
		}
	case oidBool:
		if len(raw) == 1 {
			return strconv.FormatBool(raw[0] != 0), true
		}
	case oidInt2:
		if len(raw) == 2 {
			return strconv.Itoa(int(int16(binary.BigEndian.Uint16(raw)))), true
		}
	case oidInt4:
		if len(raw) == 4 {
			return strconv.Itoa(int(int32(binary.BigEndian.Uint32(raw)))), true
		}
	case oidOID:
		if len(raw) == 4 {
			return strconv.FormatUint(uint64(binary.BigEndian.Uint32(raw)), 10), true
		}
	case oidInt8:
		if len(raw) == 8 {
			return strconv.FormatInt(int64(binary.BigEndian.Uint64(raw)), 10), true
		}
	case oidFloat4:
		if len(raw) == 4 {
			return strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(raw))), 'g', -1, 32), true
		}
	case oidFloat8:
		if len(raw) == 8 {
			return strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(raw)), 'g', -1, 64), true
		}
	case oidBytea:
		return `\x` + hex.EncodeToString(raw), true
	case oidUUID:
		if len(raw) == 16 {
			h := hex.EncodeToString(raw)
			return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:]), true
		}
	case oidDate:
		if len(raw) == 4 {
			return pgEpoch.AddDate(0, 0, int(int32(binary.BigEndian.Uint32(raw)))).Format("2006-01-02"), true
		}
	case oidTimestamp, oidTimestampTZ:
		if len(raw) == 8 {
			us := int64(binary.BigEndian.Uint64(raw))
			switch us {
			case math.MaxInt64:
				return "infinity", true
			case math.MinInt64:
				return "-infinity", true
			}
			t := pgEpoch.Add(time.Duration(us) * time.Microsecond)
			if typ == oidTimestampTZ {
				return t.Format("2006-01-02 15:04:05.999999Z07:00"), true
			}
			return t.Format("2006-01-02 15:04:05.999999"), true
		}
	}
	return "", false
}

// numeric is the text of a binary numeric: a count of base-10000 digits,
// the weight of the first, the sign (or NaN, ±Infinity), the digits to
// show after the point, then the digits.
func numeric(raw []byte) (string, bool) {
	if len(raw) < 8 {
		return "", false
	}
	n := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign, dscale := binary.BigEndian.Uint16(raw[4:]), int(binary.BigEndian.Uint16(raw[6:]))
	if len(raw) != 8+2*n {
		return "", false
	}
	switch sign {
	case 0xc000:
		return "NaN", true
	case 0xd000:
		return "Infinity", true
	case 0xf000:
		return "-Infinity", true
	case 0x0000, 0x4000:
	default:
		return "", false
	}
	digit := func(k int) int {
		if k < 0 || k >= n {
			return 0
		}
		return int(binary.BigEndian.Uint16(raw[8+2*k:]))
	}
	var b []byte
	if sign == 0x4000 {
		b = append(b, '-')
	}
	if weight < 0 {
		b = append(b, '0')
	}
	for k := 0; k <= weight; k++ {
		if k == 0 {
			b = strconv.AppendInt(b, int64(digit(k)), 10)
		} else {
			b = fmt.Appendf(b, "%04d", digit(k))
		}
	}
	if dscale > 0 {
		b = append(b, '.')
		var frac []byte
		for k := weight + 1; len(frac) < dscale; k++ {
			frac = fmt.Appendf(frac, "%04d", digit(k))
		}
		b = append(b, frac[:dscale]...)
	}
	return string(b), true
}
