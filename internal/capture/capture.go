// Package capture owns the capture of an application's workload from
// PostgreSQL server logs: it reads csvlog, jsonlog and stderr logs (plain
// or gzip-compressed, several rotated files as one stream), rebuilds each
// client session with its statements, bind parameters, start offsets,
// durations and errors, and writes them to a compact capture file that a
// replay reads back. It also says which server settings make a log
// capturable (ServerSettings) and normalises statements into fingerprints
// for reports.
//
// It never connects to a database and never stops at a bad line: whatever
// it cannot use is counted, with a reason and the first place it was seen,
// in Capture.Skipped. It does not replay anything and does not decide what
// a replay should do with sessions that were cut by the edges of the log;
// it only flags them.
package capture

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Format names the capture file's schema; the number after the slash
// changes when a field changes meaning.
const Format = "dbparity.capture/1"

// Capture is one workload read from a set of log files.
type Capture struct {
	Format string // always Format
	// Engine is the server whose logs these are: EnginePostgres (also
	// for captures written before engines were named) or EngineMySQL
	// (MySQL and MariaDB).
	Engine  string
	Sources []string // the log files, in the order they were read (by first timestamp)
	// Start is the earliest moment the capture knows of: the first
	// session's start or the first statement's start. Every offset is
	// relative to it.
	Start time.Time
	// End is when the last session ended (or its last statement ended).
	End      time.Time
	Sessions []Session // ordered by start, then ID
	Texts    []string  // distinct statement texts; Statement.Text indexes it
	Skipped  []Skip    // what was not captured or was captured incomplete, and why
	// ErrorsUnknown says the source does not record errors (MySQL's and
	// MariaDB's general and slow logs): a statement without Error may
	// have failed. PostgreSQL's logs and the wire record them.
	ErrorsUnknown bool
}

// ErrorsKnown tells a capture whose statements without Error succeeded:
// not one from MySQL's or MariaDB's logs (ErrorsUnknown, or a capture of
// them written before it was kept).
func (c *Capture) ErrorsKnown() bool {
	return !c.ErrorsUnknown && (c.Engine != EngineMySQL || c.FromWire())
}

// Session is one client connection.
type Session struct {
	// ID is PostgreSQL's session id (%c, csvlog session_id, jsonlog
	// session_id: the backend's start time and pid in hex), or, when a
	// stderr log_line_prefix has no %c, "pid-N" with N counting the pid's
	// sessions in the log.
	ID          string
	PID         int
	User        string
	Database    string
	Application string // as at connection; "" when unknown
	Host        string // client address or "[local]"; "" when unknown
	// Start and End are offsets from Capture.Start: the connection and the
	// disconnection, or the first and last thing the log shows of the
	// session when those lines are missing.
	Start, End time.Duration
	// StartedBeforeLog: the log has no connection line for the session
	// (it was open when the log began, or log_connections was off).
	StartedBeforeLog bool
	// EndedAfterLog: the log has no disconnection line for the session
	// (it was still open when the log ended, or log_disconnections was off).
	EndedAfterLog bool
	Statements    []Statement // in execution order
}

// Statement is one executed statement: a simple query or one execution of
// an extended-protocol statement (parse and bind are folded into it).
type Statement struct {
	// Offset is when the statement started, from Capture.Start: the log
	// time minus the duration for lines logged at the end of a statement,
	// and the start of its first protocol message (parse or bind) for the
	// extended protocol. Offsets never decrease within a session.
	Offset time.Duration
	// Duration is the server's time for the statement (parse, bind and
	// execute for the extended protocol); 0 when the log does not say
	// (log_statement alone, failed statements).
	Duration time.Duration
	Text     int    // index into Capture.Texts
	Prepared string // name of the prepared statement executed; "" for unnamed and simple queries
	Extended bool   // came through the extended query protocol
	// Params holds the bind parameters in order ($1 first) as the server
	// printed them (text); a nil element is NULL.
	Params []*string
	// ParamsTruncated: the log does not hold the whole parameter values
	// (cut by log_parameter_max_length, or not logged at all), so the
	// statement cannot be replayed as it ran.
	ParamsTruncated bool
	Error           *Error // nil when the statement succeeded
	// Seq is the statement's place in the logs' line order (from 1): the
	// line that ended it (its duration, its error, or for a log written
	// at the start of statements, that line). Log lines are written in
	// the order backends finish, so Seq orders statements whose times the
	// log's millisecond clock cannot tell apart. 0 in captures written
	// before it was kept.
	Seq int64
	// Rows is what the server's answer said the statement affected or
	// returned (its command tag: UPDATE 3, SELECT 10); nil when the
	// source does not say (server logs).
	Rows *int64
	// Types are the parameters' types as the client declared them when it
	// prepared the statement (PostgreSQL type OIDs, 0 for "let the server
	// infer"); nil when the source does not say (server logs).
	Types []uint32
	// CopyBytes is the size of the data a COPY ... FROM STDIN sent, and
	// CopyData the data (the COPY stream as the client sent it) when the
	// capture kept it (a wire capture, up to its limit); nil
	// otherwise.
	CopyBytes int64
	CopyData  []byte
	// InsertID is the first AUTO_INCREMENT value the statement generated,
	// as the server said it (MySQL and MariaDB: the OK packet's
	// last_insert_id of an INSERT or REPLACE on the wire, a slow log's
	// SET insert_id=N); 0 when the source does not say (the general log,
	// MariaDB's slow log, PostgreSQL) or the statement generated none. A
	// replay on MariaDB makes the statement take it again, so that
	// concurrent sessions' inserts get the values they got in the
	// capture in whatever order they reach the server.
	InsertID int64
}

// Error is a statement's failure as logged.
type Error struct {
	SQLState string // "" when the log does not carry it (stderr without %e)
	Message  string
}

// SkipEffect says what a skip means for the capture.
type SkipEffect string

const (
	// Ignored: lines of no interest to a capture (checkpoints, autovacuum,
	// other processes); nothing is lost.
	Ignored SkipEffect = "ignored"
	// Dropped: lines that may have held workload but could not be used.
	Dropped SkipEffect = "dropped"
	// Flagged: captured, but incomplete in the way the reason says.
	Flagged SkipEffect = "flagged"
)

// Skip counts one reason for skipping or flagging, with the first place it
// was seen.
type Skip struct {
	Reason string
	Effect SkipEffect
	Count  int
	First  string // file:line of the first occurrence
}

// Statements counts the statements of all sessions.
func (c *Capture) Statements() int {
	n := 0
	for i := range c.Sessions {
		n += len(c.Sessions[i].Statements)
	}
	return n
}

// WirePrefix starts the source of a capture read from the wire (a
// proxy's relayed traffic) rather than from logs.
const WirePrefix = "wire: "

// FromWire tells a capture read from the wire: its statements' times are
// the client's (request to answer), their rows and parameter types known.
func (c *Capture) FromWire() bool {
	return len(c.Sources) > 0 && strings.HasPrefix(c.Sources[0], WirePrefix)
}

// Summary returns the human lines that say what the capture holds and
// what was skipped, each ending in a newline (summary.go).
func (c *Capture) Summary() string { return c.tally().summary(c) }

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TagRows reads the rows a command tag counts ("UPDATE 3", "INSERT 0 1",
// "SELECT 10", "COPY 5"): the server's answer, as captured from the wire
// and as a replay gets it; false for a tag without a count.
func TagRows(tag string) (int64, bool) {
	i := strings.LastIndexByte(tag, ' ')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(tag[i+1:], 10, 64)
	return n, err == nil
}
