package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

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
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213: // ER_LOCK_DEADLOCK
			return ErrorClass{Name: "deadlock", Retry: true}
		case 1205: // ER_LOCK_WAIT_TIMEOUT
			return ErrorClass{Name: "lock_wait_timeout", Retry: true}
		case 1053, 1927, 4031: // shutdown in progress, connection killed, idle timeout
			return ErrorClass{Name: "connection", Lost: true}
		}
		return ErrorClass{Name: "mysql_" + strconv.Itoa(int(me.Number))}
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) {
		return ErrorClass{Name: "connection", Lost: true}
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

// ErrServerFull is a connection the server refused because it has no
// connection slot left: PostgreSQL's SQLSTATE 53300 (too many clients,
// or the remaining slots reserved), MySQL's error 1040 (too many
// connections). Connecting again cannot help; max_connections decides.
var ErrServerFull = errors.New("the server has no connection slot left")

// connectFailure is a failed connection attempt reported as msg, still
// matching ErrServerFull when the server said it was full.
func connectFailure(msg string, err error) error {
	if serverFull(err) {
		return fullError(msg)
	}
	return errors.New(msg)
}

func serverFull(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	return (errors.As(err, &pe) && pe.Code == "53300") || (errors.As(err, &me) && me.Number == 1040)
}

type fullError string

func (e fullError) Error() string        { return string(e) }
func (e fullError) Is(target error) bool { return target == ErrServerFull }

// SQLState is a server error's SQLSTATE (PostgreSQL's, or MySQL's
// alongside its error number), "" for no error and "other" for an error
// that is not the server's (a lost connection).
func SQLState(err error) string {
	if err == nil {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.SQLState != [5]byte{} {
		return string(me.SQLState[:])
	}
	return "other"
}
