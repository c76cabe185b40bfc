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
	case oidText, oidVarchar, oidBPChar, oidName:
		return string(raw), true
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
			t := pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(raw))) * time.Microsecond)
			if typ == oidTimestampTZ {
				return t.Format("2006-01-02 15:04:05.999999Z07:00"), true
			}
			return t.Format("2006-01-02 15:04:05.999999"), true
		}
	}
	return "", false
}
