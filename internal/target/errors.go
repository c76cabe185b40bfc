package target

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// ErrorClass is what the driver needs to know of a failed statement: a
// stable name to count it under, whether running the transaction again is
// the right response, and whether the connection is gone.
type ErrorClass struct {
	Name  string
	Retry bool
	Lost  bool
}

// Classify sorts an error by its code, never by its message text.
func Classify(err error) ErrorClass {
	switch {
	case err == nil:
		return ErrorClass{}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrorClass{Name: "canceled"}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001":
			return ErrorClass{Name: "serialization_failure", Retry: true}
		case pe.Code == "40P01":
			return ErrorClass{Name: "deadlock", Retry: true}
		case strings.HasPrefix(pe.Code, "08"), pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			return ErrorClass{Name: "connection", Lost: true}
		}
		return ErrorClass{Name: "sqlstate_" + pe.Code}
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // primary result code
		case 5: // SQLITE_BUSY
			return ErrorClass{Name: "busy", Retry: true}
		case 6: // SQLITE_LOCKED
			return ErrorClass{Name: "locked", Retry: true}
		}
		return ErrorClass{Name: "sqlite_" + sqliteCodeName(se.Code()&0xff)}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) {
		return ErrorClass{Name: "connection", Lost: true}
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return ErrorClass{Name: "connection", Lost: true}
	}
	return ErrorClass{Name: "other"}
}

func sqliteCodeName(c int) string {
	names := map[int]string{1: "error", 2: "internal", 3: "perm", 4: "abort", 7: "nomem", 8: "readonly",
		9: "interrupt", 10: "ioerr", 11: "corrupt", 13: "full", 14: "cantopen", 17: "schema",
		18: "toobig", 19: "constraint", 20: "mismatch", 21: "misuse", 26: "notadb"}
	if n, ok := names[c]; ok {
		return n
	}
	return "code"
}
