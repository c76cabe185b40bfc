package capture

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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

// readJSON hands each line's record to emit until emit returns false.
func readJSON(lines *lineReader, file string, b *builder, emit func(*entry) bool) error {
	for {
		line, n, err := lines.next()
		if err == io.EOF {
			return nil
		}
		if err == errLongLine {
			b.skip(Dropped, reasonLong, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r jsonRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Severity == "" {
			b.skip(Dropped, reasonJSON, fmt.Sprintf("%s:%d", file, n))
			continue
		}
		t, ok := b.clock.parse(r.Timestamp)
		if !ok {
			b.skip(Dropped, reasonTime, fmt.Sprintf("%s:%d", file, n))
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
