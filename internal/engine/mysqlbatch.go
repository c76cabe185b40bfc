package engine

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// SendBatch sends b's statements as one multi-statement text, the
// arguments written into it as literals (appendLiteral): one round trip,
// as PostgreSQL's pipeline takes. The MySQL protocol has no pipeline for
// prepared statements, so a session's batch goes as text and its lone
// statements stay prepared. Where the connection reads its answers
// itself (myWire), a batch of one goes as text too, and each statement's
// result is read in order (wireBatch); elsewhere the driver reads them,
// and a batch of one statement, a connection of dbparity's own, or an
// argument of a type database/sql does not take go one statement after
// another.
//
// The server stops at a batch's first error, as a pipeline does. An
// Exec's Affected is its count of rows; where the driver reads the
// answer, it reports no OK packet of a text that also returns rows, so
// Affected is -1 (not known) in a batch that holds a query.
func (m *mysqlConn) SendBatch(ctx context.Context, b *Batch) error {
	if m.rowsOpen && m.wire != nil {
		return errRowsOpen
	}
	if !m.multi || len(b.items) < 2 && m.wire == nil {
		return b.runEach(ctx, m)
	}
	queries, call, err := m.batchText(b)
	if errors.Is(err, errNotInterpolable) {
		return b.runEach(ctx, m)
	}
	if err != nil {
		return err
	}
	qctx, err := m.w.begin(ctx)
	if err != nil {
		return err
	}
	// Only a TCP socket's reader waits for expected bytes: on a unix
	// socket the texts are not hashed nor their answers kept.
	var key uint64
	var least int64
	known := false
	if m.net.tcp {
		key = m.key.Sum64()
		if least, known = m.answers[key]; known {
			m.net.expect.Store(least - least/32)
		}
	}
	switch text := m.text[myHeader:]; {
	case m.wire != nil && !call:
		err = m.wireBatch(b)
	case queries == 0:
		err = m.batchExec(qctx, b, string(text))
	default:
		err = m.batchQuery(qctx, b, string(text), queries)
	}
	m.net.expect.Store(0)
	if got := m.net.got.Load(); m.net.tcp && err == nil && (!known || got < least) {
		if m.answers == nil {
			m.answers = map[uint64]int64{}
		}
		m.answers[key] = got
	}
	return m.finish(ctx, err)
}

// answerSeed keys the answers' sizes by their batch's statement texts,
// their arguments aside. A batch's answer will have at least 31/32 of the
// least its texts' answers had: the answers differ by their rows' values
// (order-entry's New-Order by 1-3%; an answer below the margin came in 34
// batches of a 20 s run of about 26,000 transactions, where a run of that
// length counted 46,565 batches), and a shorter answer costs expectWait
// at most.
var answerSeed = maphash.MakeSeed()

// errNotInterpolable is a batch argument appendLiteral cannot write.
var errNotInterpolable = errors.New("argument not interpolable")

// batchText writes b's statements into m.text after myHeader bytes left
// for the packet's header, separated by semicolons, their arguments in
// place, and hashes their texts into m.key when the reader can use it
// (TCP); it returns how many of the statements return rows (the second
// half of a split UPDATE ... RETURNING included), and whether one is a
// CALL (whose result sets are not one per statement). m.parts[i] is the
// i-th item's statement as rewritten (nil for a BEGIN), for the reading
// of the answer.
func (m *mysqlConn) batchText(b *Batch) (queries int, call bool, err error) {
	m.text = append(m.text[:0], make([]byte, myHeader)...)
	m.parts = m.parts[:0]
	if m.net.tcp {
		if m.key.Seed() != answerSeed {
			m.key.SetSeed(answerSeed)
		}
		m.key.Reset()
	}
	n := int64(0)
	sep := func() {
		if len(m.text) > myHeader {
			m.text = append(m.text, ';')
		}
		n++
	}
	inTx := false
	for i := range b.items {
		it := &b.items[i]
		it.NoRows, it.Affected = false, -1
		if it.begin != nil {
			sep()
			q := "START TRANSACTION"
			if *it.begin == ReadOnly {
				q = "START TRANSACTION READ ONLY"
			}
			m.text = append(m.text, q...)
			if m.net.tcp {
				m.key.WriteString(q)
				m.key.WriteByte(0)
			}
			inTx = true
			m.parts = append(m.parts, nil)
			continue
		}
		s := m.textStmt(it.SQL)
		m.parts = append(m.parts, s)
		for p := s; p != nil; p = p.then {
			a, err := p.args(it.Args)
			if err != nil {
				return 0, false, fmt.Errorf("statement %d of the batch: %w", i+1, err)
			}
			if len(a) != len(p.marks) {
				return 0, false, fmt.Errorf("statement %d of the batch: %d arguments for %d placeholders", i+1, len(a), len(p.marks))
			}
			sep()
			if m.net.tcp {
				m.key.WriteString(p.text)
				m.key.WriteByte(0)
			}
			at := 0
			for k, v := range a {
				m.text = append(m.text, p.text[at:p.marks[k]]...)
				// As database/sql converts them: pointers followed, integers
				// widened; what is left is one of driver.Value's types.
				dv, err := driver.DefaultParameterConverter.ConvertValue(v)
				if err != nil {
					return 0, false, errNotInterpolable
				}
				var ok bool
				if m.text, ok = appendLiteral(m.text, dv); !ok {
					return 0, false, errNotInterpolable
				}
				at = p.marks[k] + 1
			}
			m.text = append(m.text, p.text[at:]...)
		}
		if it.Dest != nil || it.Each != nil {
			queries++
		}
		call = call || s.call
	}
	m.n.Add(n)
	m.inTx = m.inTx || inTx
	return queries, call, nil
}

// appendLiteral appends v, a driver.Value, to b as an SQL literal that
// reads the same whatever the session's sql_mode: a string in quotes, its
// quotes doubled, or, when it holds a backslash (an escape unless
// NO_BACKSLASH_ESCAPES), a NUL or a Ctrl-Z, as hexadecimal in utf8mb4;
// bytes as hexadecimal; a time as go-sql-driver writes one (UTC, the
// sessions' time zone). ok is false for a value it cannot write (NaN, an
// infinity, another type).
func appendLiteral(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "NULL"...), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, false
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64), true
	case bool:
		if v {
			return append(b, '1'), true
		}
		return append(b, '0'), true
	case string:
		if strings.ContainsAny(v, "\\\x00\x1a") {
			b = append(b, "_utf8mb4 X'"...)
			return append(hex.AppendEncode(b, []byte(v)), '\''), true
		}
		b = append(b, '\'')
		for i := 0; i < len(v); i++ {
			if v[i] == '\'' {
				b = append(b, '\'')
			}
			b = append(b, v[i])
		}
		return append(b, '\''), true
	case []byte:
		if v == nil {
			return append(b, "NULL"...), true
		}
		b = append(b, "X'"...)
		return append(hex.AppendEncode(b, v), '\''), true
	case time.Time:
		if v.IsZero() {
			return append(b, "'0000-00-00'"...), true
		}
		b = append(b, '\'')
		return append(v.In(time.UTC).AppendFormat(b, "2006-01-02 15:04:05.999999"), '\''), true
	}
	return b, false
}

// textStmt is query rewritten for MySQL, never prepared: a batch's
// statements go as text.
func (m *mysqlConn) textStmt(query string) *mysqlStmt {
	if s, ok := m.texts[query]; ok {
		return s
	}
	s := rewrite(query)
	if m.texts == nil {
		m.texts = map[string]*mysqlStmt{}
	}
	m.texts[query] = s
	return s
}

// batchExec sends a batch that returns no rows and takes each
// statement's count of rows from the driver's result.
func (m *mysqlConn) batchExec(ctx context.Context, b *Batch, text string) error {
	return m.c.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the MySQL driver cannot execute a batch") // not go-sql-driver/mysql
		}
		res, err := ex.ExecContext(ctx, text, nil)
		if err != nil {
			return fmt.Errorf("batch of %d statements: %w", len(b.items), err)
		}
		all, ok := res.(mysql.Result)
		if !ok {
			return nil
		}
		counts := all.AllRowsAffected()
		k := 0
		for i := range b.items {
			it := &b.items[i]
			n := 1
			if it.begin == nil && m.parts[i].then != nil {
				n = 2
			}
			if it.begin == nil && k < len(counts) {
				it.Affected = counts[k]
			}
			k += n
		}
		return nil
	})
}

// batchQuery sends a batch with queries among its statements and reads
// their result sets in order: the driver passes over the results without
// rows (a BEGIN's, an Exec's), so the n-th result set is the n-th query's.
func (m *mysqlConn) batchQuery(ctx context.Context, b *Batch, text string, queries int) error {
	rows, err := m.c.QueryContext(ctx, text)
	if err != nil {
		return fmt.Errorf("batch of %d statements: %w", len(b.items), err)
	}
	defer rows.Close()
	first := true
	for i := range b.items {
		it := &b.items[i]
		if it.Dest == nil && it.Each == nil {
			continue
		}
		if !first && !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				return fmt.Errorf("statement %d of the batch or one before it: %w", i+1, err)
			}
			return fmt.Errorf("statement %d of the batch returned no result set", i+1)
		}
		first = false
		if it.Dest != nil {
			if rows.Next() {
				err = rows.Scan(it.Dest...)
			} else {
				it.NoRows = true
			}
		} else {
			for err == nil && rows.Next() {
				err = it.Each(sqlRows{rows})
			}
		}
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return fmt.Errorf("statement %d of the batch: %w", i+1, err)
		}
	}
	// The statements after the last query (Execs) fail here, if at all.
	for rows.NextResultSet() {
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("a statement after the batch's last query: %w", err)
	}
	return nil
}

// wireRun sends m.text (after its header's room) on the connection's own
// reader and reads the answer with f. A connection whose answer was not
// read to its end (an error of the socket, a context that ended) is lost
// and its socket closed, as the driver closes one: what is left of the
// answer would be read as the next command's.
func (m *mysqlConn) wireRun(f func(*myWire) error) error {
	if m.lost {
		return errConnLost
	}
	c := m.wire
	c.start()
	err := c.send(m.text)
	if err == nil {
		err = f(c)
	}
	if err != nil && !c.ended {
		m.lost = true
		c.conn.Close()
		if !errors.Is(err, errWire) {
			err = fmt.Errorf("the connection to the server was lost: %w", err)
		}
	}
	c.done()
	return err
}

// errRowsOpen is a command of the reader's while the driver reads a lone
// query's rows from the socket.
var errRowsOpen = errors.New("a query's rows are still open on this connection: close them first")

// errConnLost is a command on a connection already lost.
var errConnLost error = lostError("the connection to the server was lost")

// wireBatch sends b's text, made by batchText, and reads each
// statement's result in order: a query's rows into its Dest or Each, an
// Exec's count of rows into its Affected (the UPDATE's of a split UPDATE
// ... RETURNING). An error ends the batch where it happened, the rest of
// the answer read.
func (m *mysqlConn) wireBatch(b *Batch) error {
	return m.wireRun(func(c *myWire) error {
		for i := range b.items {
			it, p := &b.items[i], m.parts[i]
			for first := true; first || p != nil; first = false {
				if (i > 0 || !first) && !c.more {
					return fmt.Errorf("statement %d of the batch: the answer ended before its result", i+1)
				}
				rows, n, err := c.result()
				if err != nil {
					return fmt.Errorf("statement %d of the batch: %w", i+1, err)
				}
				last := p == nil || p.then == nil
				switch {
				case !rows:
					if first && it.begin == nil {
						it.Affected = n
					}
				case last && it.Dest != nil:
					if c.next() {
						err = c.Scan(it.Dest...)
					} else if c.err == nil {
						it.NoRows = true
					}
				case last && it.Each != nil:
					for err == nil && c.next() {
						err = it.Each(c)
					}
				}
				if err == nil {
					for c.next() {
					}
					err = c.err
				}
				if err != nil {
					if d := c.drain(); d != nil && !c.ended {
						err = d // the answer's rest could not be read
					}
					return fmt.Errorf("statement %d of the batch: %w", i+1, err)
				}
				if p != nil {
					p = p.then
				}
			}
		}
		if err := c.drain(); err != nil {
			return fmt.Errorf("a statement after the batch's last: %w", err)
		}
		return nil
	})
}
