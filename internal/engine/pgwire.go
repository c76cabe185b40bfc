package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL batch path, below pgx's type system. A worker's batches
// are the hot path of an order-entry run, and a profile put pgx's
// per-statement work (queueing, choosing an encode plan for each
// argument, scanning through its plans, and what they allocate) at about
// a fifth of the driver's CPU. Here each statement is prepared once per
// connection, as pgx's statement cache does, its arguments go straight
// into the wire's bytes (binary for integers, floats, booleans and
// timestamps, text otherwise, as pgx chooses), and its rows are decoded
// from their bytes into the few types the workloads read. Any other type
// goes through pgx's type map, so none is refused that pgx would take.
// The server receives the same Bind and Execute messages as from pgx.

// Type OIDs sent or read in binary here.
const (
	oidBool        = 16
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

const textFormat, binaryFormat = 0, 1

// pgStmt is a statement prepared on one connection.
type pgStmt struct {
	sd            *pgconn.StatementDescription
	resultFormats []int16
}

// wire is a connection's reusable storage for batches.
type wire struct {
	stmts map[string]*pgStmt
	// One batch's statements, the encoded arguments of all of them (each
	// a span of enc, or NULL) and their formats.
	batch []*pgStmt
	enc   []byte
	spans [][2]int32
	vals  [][]byte
	fmts  []int16
	row   wireRows
}

// prepared is sql prepared on p, once.
func (p *pgConn) prepared(ctx context.Context, sql string) (*pgStmt, error) {
	if s := p.w.stmts[sql]; s != nil {
		return s, nil
	}
	if p.w.stmts == nil {
		p.w.stmts = map[string]*pgStmt{}
	}
	p.trips.Add(1)
	name := "dbparity_" + strconv.Itoa(len(p.w.stmts)+1)
	if p.unnamed {
		name = "" // described once, then sent whole each time
	}
	sd, err := p.c.PgConn().Prepare(ctx, name, sql, nil)
	if err != nil {
		return nil, poolerHint(err)
	}
	s := &pgStmt{sd: sd, resultFormats: make([]int16, len(sd.Fields))}
	for i, f := range sd.Fields {
		switch f.DataTypeOID {
		case oidBool, oidInt2, oidInt4, oidInt8, oidOID, oidFloat4, oidFloat8:
			s.resultFormats[i] = binaryFormat
		}
	}
	p.w.stmts[sql] = s
	return s, nil
}

// SendBatch sends b in one round trip (pipeline mode, one Sync) and reads
// every result in order; the first error is returned (a failed statement
// aborts the transaction, so the statements after it fail too and are
// not looked at). Every argument is encoded before anything is sent: an
// argument the statement cannot take leaves the connection as it was.
func (p *pgConn) SendBatch(ctx context.Context, b *Batch) error {
	w := &p.w
	w.batch, w.enc, w.spans, w.fmts = w.batch[:0], w.enc[:0], w.spans[:0], w.fmts[:0]
	for i := range b.items {
		it := &b.items[i]
		sql := it.SQL
		if it.begin != nil {
			sql = "BEGIN"
		}
		s, err := p.prepared(ctx, sql)
		if err != nil {
			return err
		}
		if len(it.Args) != len(s.sd.ParamOIDs) {
			return fmt.Errorf("statement %d of the batch takes %d arguments, not %d", i+1, len(s.sd.ParamOIDs), len(it.Args))
		}
		for k, a := range it.Args {
			if err := p.encode(s.sd.ParamOIDs[k], a); err != nil {
				return fmt.Errorf("statement %d of the batch, argument %d: %w", i+1, k+1, err)
			}
		}
		w.batch = append(w.batch, s)
	}
	w.vals = w.vals[:0]
	for _, sp := range w.spans {
		if sp[0] < 0 {
			w.vals = append(w.vals, nil)
		} else {
			w.vals = append(w.vals, w.enc[sp[0]:sp[1]:sp[1]])
		}
	}

	pl := p.c.PgConn().StartPipeline(ctx)
	next := 0
	for i, s := range w.batch {
		n := len(b.items[i].Args)
		if p.unnamed {
			pl.SendQueryParams(s.sd.SQL, w.vals[next:next+n], s.sd.ParamOIDs, w.fmts[next:next+n], s.resultFormats)
		} else {
			pl.SendQueryStatement(s.sd, w.vals[next:next+n], w.fmts[next:next+n], s.resultFormats)
		}
		next += n
	}
	p.stmts.Add(int64(len(b.items)))
	p.trips.Add(1)
	if err := pl.Sync(); err != nil {
		return err
	}
	var first error
	for i := range b.items {
		res, err := pl.GetResults()
		if err != nil {
			first = err
			break
		}
		rr, ok := res.(*pgconn.ResultReader)
		if !ok {
			first = fmt.Errorf("statement %d of the batch: unexpected %T from the server", i+1, res)
			break
		}
		if err := p.read(rr, &b.items[i], w.batch[i]); err != nil {
			first = err
			break
		}
	}
	if err := pl.Close(); first == nil {
		first = err
	}
	return poolerHint(first)
}

// poolerHint names the remedy when a statement prepared by name is
// missing, or already there, on the server connection: the mark of a
// transaction-mode pooler (PgBouncer before 1.21) between dbparity and
// the server, which hands each transaction any server connection.
func poolerHint(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || (pe.Code != "26000" && pe.Code != "42P05") || !strings.Contains(pe.Message, "dbparity_") {
		return err
	}
	return fmt.Errorf("%w (a transaction-mode pooler between dbparity and the server? add default_query_exec_mode=exec to the target URL: no statement is then prepared by name)", err)
}

// read takes one statement's result into it.
func (p *pgConn) read(rr *pgconn.ResultReader, it *BatchItem, s *pgStmt) error {
	switch {
	case it.Dest != nil:
		if !rr.NextRow() {
			_, err := rr.Close()
			it.NoRows = err == nil
			return err
		}
		if err := p.scan(rr.Values(), s, it.Dest); err != nil {
			rr.Close()
			return err
		}
	case it.Each != nil:
		p.w.row = wireRows{p: p, rr: rr, s: s}
		for rr.NextRow() {
			if err := it.Each(&p.w.row); err != nil {
				rr.Close()
				return err
			}
		}
	}
	tag, err := rr.Close()
	it.Affected = tag.RowsAffected()
	return err
}

// wireRows is the current row of a batch statement's result, for a
// Query's callback.
type wireRows struct {
	p  *pgConn
	rr *pgconn.ResultReader
	s  *pgStmt
}

func (r *wireRows) Next() bool             { return r.rr.NextRow() }
func (r *wireRows) Scan(dest ...any) error { return r.p.scan(r.rr.Values(), r.s, dest) }
func (r *wireRows) Err() error             { return nil }
func (r *wireRows) Close()                 {}

// encode appends one argument for a parameter of type oid.
func (p *pgConn) encode(oid uint32, a any) error {
	w := &p.w
	start := int32(len(w.enc))
	format := int16(binaryFormat)
	switch v := a.(type) {
	case nil:
		w.spans = append(w.spans, [2]int32{-1, -1})
		w.fmts = append(w.fmts, textFormat)
		return nil
	case string:
		// As pgx does: a string goes as text whatever the type, for the
		// server to read.
		w.enc, format = append(w.enc, v...), textFormat
	case int:
		if !p.appendInt(oid, int64(v)) {
			return p.encodeByTypeMap(oid, a)
		}
	case int64:
		if !p.appendInt(oid, v) {
			return p.encodeByTypeMap(oid, a)
		}
	case int32:
		if !p.appendInt(oid, int64(v)) {
			return p.encodeByTypeMap(oid, a)
		}
	case float64:
		switch oid {
		case oidFloat8:
			w.enc = binary.BigEndian.AppendUint64(w.enc, math.Float64bits(v))
		default:
			return p.encodeByTypeMap(oid, a)
		}
	case bool:
		if oid != oidBool {
			return p.encodeByTypeMap(oid, a)
		}
		b := byte(0)
		if v {
			b = 1
		}
		w.enc = append(w.enc, b)
	case time.Time:
		switch oid {
		case oidTimestamptz:
			w.enc = binary.BigEndian.AppendUint64(w.enc, uint64(v.UnixMicro()-pgEpochMicros))
		case oidTimestamp:
			// A timestamp without time zone is the wall clock as given,
			// as pgx sends it.
			wall := time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
			w.enc = binary.BigEndian.AppendUint64(w.enc, uint64(wall.UnixMicro()-pgEpochMicros))
		default:
			return p.encodeByTypeMap(oid, a)
		}
	default:
		return p.encodeByTypeMap(oid, a)
	}
	w.spans = append(w.spans, [2]int32{start, int32(len(w.enc))})
	w.fmts = append(w.fmts, format)
	return nil
}

// pgEpochMicros is 2000-01-01 UTC, PostgreSQL's epoch, in Unix
// microseconds.
var pgEpochMicros = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// appendInt appends n in the binary form of an integer or float8
// parameter; false when the type is another or n does not fit.
func (p *pgConn) appendInt(oid uint32, n int64) bool {
	w := &p.w
	switch oid {
	case oidInt2:
		if n < math.MinInt16 || n > math.MaxInt16 {
			return false
		}
		w.enc = binary.BigEndian.AppendUint16(w.enc, uint16(n))
	case oidInt4:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return false
		}
		w.enc = binary.BigEndian.AppendUint32(w.enc, uint32(n))
	case oidInt8:
		w.enc = binary.BigEndian.AppendUint64(w.enc, uint64(n))
	case oidFloat8:
		w.enc = binary.BigEndian.AppendUint64(w.enc, math.Float64bits(float64(n)))
	default:
		return false
	}
	return true
}

// encodeByTypeMap encodes an argument this file has no fast way for
// through pgx's type map, in the format pgx would choose.
func (p *pgConn) encodeByTypeMap(oid uint32, a any) error {
	w := &p.w
	m := p.c.TypeMap()
	format := m.FormatCodeForOID(oid)
	start := len(w.enc)
	buf, err := m.Encode(oid, format, a, w.enc)
	if err != nil {
		return err
	}
	if buf == nil {
		w.spans = append(w.spans, [2]int32{-1, -1})
	} else {
		w.enc = buf
		w.spans = append(w.spans, [2]int32{int32(start), int32(len(w.enc))})
	}
	w.fmts = append(w.fmts, format)
	return nil
}

// scan decodes a row's values into dest.
func (p *pgConn) scan(vals [][]byte, s *pgStmt, dest []any) error {
	if len(vals) != len(dest) {
		return fmt.Errorf("%d columns, %d destinations", len(vals), len(dest))
	}
	for i, d := range dest {
		v := vals[i]
		bin := s.resultFormats[i] == binaryFormat
		oid := s.sd.Fields[i].DataTypeOID
		if v != nil {
			switch d := d.(type) {
			case *string:
				if !bin {
					*d = string(v)
					continue
				}
			case *int64:
				if n, ok := wireInt(v, bin, oid); ok {
					*d = n
					continue
				}
			case *int:
				if n, ok := wireInt(v, bin, oid); ok {
					*d = int(n)
					continue
				}
			case **int64:
				if n, ok := wireInt(v, bin, oid); ok {
					*d = &n
					continue
				}
			case *float64:
				if f, ok := wireFloat(v, bin, oid); ok {
					*d = f
					continue
				}
			}
		} else if d, ok := d.(**int64); ok {
			*d = nil
			continue
		}
		if err := p.c.TypeMap().Scan(oid, s.resultFormats[i], v, d); err != nil {
			return fmt.Errorf("column %d (%s): %w", i+1, s.sd.Fields[i].Name, err)
		}
	}
	return nil
}

// wireInt reads an integer column; false for any other.
func wireInt(v []byte, bin bool, oid uint32) (int64, bool) {
	if !bin {
		switch oid {
		case oidInt2, oidInt4, oidInt8:
		default:
			return 0, false
		}
		n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(v), len(v)), 10, 64)
		return n, err == nil
	}
	switch {
	case oid == oidInt2 && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v))), true
	case oid == oidInt4 && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case oid == oidInt8 && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v)), true
	}
	return 0, false
}

// wireFloat reads a float, numeric or integer column; false for any
// other.
func wireFloat(v []byte, bin bool, oid uint32) (float64, bool) {
	if bin {
		switch {
		case oid == oidFloat8 && len(v) == 8:
			return math.Float64frombits(binary.BigEndian.Uint64(v)), true
		case oid == oidFloat4 && len(v) == 4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(v))), true
		}
		n, ok := wireInt(v, bin, oid)
		return float64(n), ok
	}
	const oidNumeric = 1700
	if oid != oidNumeric {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(v), len(v)), 64)
	return f, err == nil
}
