package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonRecord holds the jsonlog keys capture uses (PostgreSQL 15 "Using
// JSON-Format Log Output"); the server leaves out keys with no value.
type jsonRecord struct {
	Timestamp   string `json:"timestamp"`
	User        string `json:"user"`
	DBName      string `json:"dbname"`
	PID         int    `json:"pid"`
	RemoteHost  string `json:"remote_host"`
	SessionID   string `json:"session_id"`
	Severity    string `json:"error_severity"`
	StateCode   string `json:"state_code"`
	Message     string `json:"message"`
	Detail      string `json:"detail"`
	Context     string `json:"context"`
	Statement   string `json:"statement"`
	Application string `json:"application_name"`
	BackendType string `json:"backend_type"`
}

// readJSON hands each line's record to emit until emit returns false, and
// what it skips to out.
func readJSON(sc *scanner, file string, clk *clock, out sink, emit func(*entry) bool) error {
	for {
		sp, err := sc.next()
		n := sp.n
		if err == io.EOF {
			return nil
		}
		if err == errLongLine {
			out.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		if err != nil {
			return err
		}
		line := sc.bytes(sp)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r jsonRecord
		if err := json.Unmarshal(line, &r); err != nil || r.Severity == "" {
			out.skip(Dropped, reasonJSON, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		t, ok := clk.parse(r.Timestamp)
		if !ok {
			out.skip(Dropped, reasonTime, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		e := &entry{
			file: file, line: n, time: t, pid: r.PID, session: r.SessionID,
			user: r.User, db: r.DBName, host: r.RemoteHost, app: r.Application,
			backend: r.BackendType, severity: r.Severity, state: r.StateCode,
			message: r.Message, detail: r.Detail, context: r.Context, statement: r.Statement,
		}
		if !emit(e) {
			return nil
		}
	}
}
