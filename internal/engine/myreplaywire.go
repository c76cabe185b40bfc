package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The replay's MySQL sessions speak through the reader a run's sessions
// use for their batches (myWire): go-sql-driver/mysql connects (the
// handshake, authentication, the URL's session variables), and then each
// captured text goes out as one COM_QUERY and its answer is read by
// dbparity. Through database/sql every text cost a Rows, a lock, the
// result sets' column names as strings and, with a context that can end,
// a goroutine and two hand-offs to the driver's watcher; here a text
// costs one write and the reads of its answer, and each statement of a
// multi-statement text is answered apart (its count of rows, or its
// error). Batchable keeps the driver's rule (a statement without rows
// ends a batch) all the same: the replay's batches are alike either way.
//
// myReplayWire is false to have the driver read every answer (a test
// compares both ways).
var myReplayWire = true

// wireable tells whether a connection made with cfg carries the
// protocol's own bytes on its socket, where dbparity's reader can speak:
// no TLS, no compression, and no read or write timeouts, which the driver
// keeps on the socket itself (as openMySQL decides for a run's sessions).
func wireable(cfg *mysql.Config) bool {
	return cfg.TLS == nil && !strings.Contains(cfg.FormatDSN(), "compress=true") && cfg.ReadTimeout == 0 && cfg.WriteTimeout == 0
}

// localInfile tells a text that may ask the client for a file (LOAD
// DATA LOCAL INFILE, or LOAD XML): the driver answers that request (it
// refuses), the reader does not, so the driver carries such a text.
func localInfile(text string) bool {
	if strings.EqualFold(firstWord(text), "LOAD") {
		return true
	}
	for i := 0; i+6 <= len(text); i++ {
		if (text[i] == 'I' || text[i] == 'i') && strings.EqualFold(text[i:i+6], "INFILE") {
			return true
		}
	}
	return false
}

// wireTag is a statement's outcome as PostgreSQL's command tags read it,
// with n, the count of its text's last result (a result set's rows, or
// the rows an OK packet says affected), as a wire capture keeps it.
func wireTag(text string, n int64) string {
	switch verb := strings.ToUpper(firstWord(text)); verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		return verb + " " + strconv.FormatInt(n, 10)
	case "SELECT", "WITH", "SHOW":
		return "SELECT " + strconv.FormatInt(n, 10)
	}
	return myTag(text, 0)
}

// run sends r.text (after its header's room) and reads the answer with
// f. A connection whose answer was not read to its end (an error of the
// socket, a context that ended) is lost and its socket closed, as the
// driver closes one: what is left of the answer would be read as the
// next command's.
func (r *myReplayConn) run(f func(*myWire) error) error {
	if r.lost {
		return errConnLost
	}
	c := r.wire
	c.start()
	err := c.send(r.text)
	if err == nil {
		err = f(c)
	}
	if err != nil && !c.ended {
		r.lost = true
		c.conn.Close()
		if !errors.Is(err, errWire) {
			err = fmt.Errorf("the connection to the server was lost: %w", err)
		}
	}
	c.done()
	return err
}

// finish ends a command begun with r.w.begin(ctx): its error is ctx's
// when ctx ended, as the driver returned it.
func (r *myReplayConn) finish(ctx context.Context, err error) error {
	r.w.end()
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// setText puts text in r.text after the packet header's room.
func (r *myReplayConn) setText(text string) {
	r.text = append(append(r.text[:0], make([]byte, myHeader)...), text...)
}

// readResult reads the head of the answer's next result and, for a result
// set, its rows: the result's count (rows, or rows affected).
func readResult(c *myWire) (int64, error) {
	rows, n, err := c.result()
	if err != nil || !rows {
		return n, err
	}
	n = 0
	for c.next() {
		n++
	}
	return n, c.err
}

// wireSimple runs text, one statement or several, and reads every
// result: the tag counts the last (its rows, or rows affected); an error
// is the first statement's that failed (the server runs none after it).
func (r *myReplayConn) wireSimple(ctx context.Context, text string) (string, error) {
	if _, err := r.w.begin(ctx); err != nil {
		return "", err
	}
	r.setText(text)
	var n int64
	err := r.run(func(c *myWire) error {
		for first := true; first || c.more; first = false {
			var err error
			if n, err = readResult(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err = r.finish(ctx, err); err != nil {
		return "", err
	}
	return wireTag(text, n), nil
}

// wireBatch sends the texts as one multi-statement query and reports
// each statement's result as it is read: the server answers each apart
// and stops at the first that fails, whose error is its outcome. An error
// of the connection is returned, with the statements reported before it.
func (r *myReplayConn) wireBatch(ctx context.Context, stmts []BatchStatement, done func(int, string, error, time.Duration)) (int, error) {
	if _, err := r.w.begin(ctx); err != nil {
		return 0, err
	}
	r.text = append(r.text[:0], make([]byte, myHeader)...)
	for k, st := range stmts {
		if k > 0 {
			r.text = append(r.text, ";\n"...)
		}
		r.text = append(r.text, strings.TrimRight(st.SQL, "; \t\r\n")...)
	}
	ran := 0
	last := time.Now()
	err := r.run(func(c *myWire) error {
		for ; ran < len(stmts); ran++ {
			if ran > 0 && !c.more {
				return fmt.Errorf("multi-statement query: the answer ended before statement %d's result", ran+1)
			}
			n, err := readResult(c)
			now := time.Now()
			var me *mysql.MySQLError
			switch {
			case err == nil:
				done(ran, wireTag(stmts[ran].SQL, n), nil, now.Sub(last))
			case c.ended && errors.As(err, &me):
				// The server's answer for this statement: its outcome.
				done(ran, "", err, now.Sub(last))
				ran++
				return nil
			default:
				return err
			}
			last = now
		}
		// A statement that answered with more than one result: read to the
		// end so that the connection goes on.
		return c.drain()
	})
	return ran, r.finish(ctx, err)
}
