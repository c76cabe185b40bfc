package replay

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/metrics"
)

// Result is what a replay did, beside its capture.
type Result struct {
	Start, End    time.Time
	Partial       bool
	PartialReason string
	// CaptureSeconds is the capture's span; ReplaySeconds the replay's.
	CaptureSeconds, ReplaySeconds float64
	Speed                         float64 // 0: as fast as possible
	Sync                          string
	Sessions, SessionsFailed      int
	SessionsFiltered              int
	// Statements were captured; Replayed were issued (OK plus Errors).
	Statements, Replayed, OK, Errors int64
	// RowsCompared counts the statements whose rows (affected or
	// returned) were compared with the capture's: those that succeeded
	// in both, where the capture has them (a wire capture) and the
	// server's answer says them.
	RowsCompared int64
	NotReplayed  map[string]int64 // by reason
	// Latency is every replayed statement's client time; Commit the
	// COMMIT statements' alone.
	Latency, Commit *metrics.Histogram
	// Lag is how late statements were issued behind their schedule (nil
	// when replaying as fast as possible).
	Lag *metrics.Histogram
	// SyncWait is how long statements waited for other sessions'
	// statements (SyncCapture), all statements counted, most at zero.
	SyncWait     *metrics.Histogram
	Fingerprints []Fingerprint
	// Outcomes are the statements whose replay ended otherwise than their
	// capture, and the captured errors that the replay repeated.
	Outcomes []Outcome
	// Sessions whose replay completed a different number of statements,
	// commits or errors than their capture.
	SessionDiffs []SessionDiff
	// CapturedCommits and ReplayedCommits count the COMMITs (END) that
	// committed; the Transactions count every committed transaction,
	// autocommit statements included, the same way on both sides.
	CapturedCommits, ReplayedCommits           int64
	CapturedTransactions, ReplayedTransactions int64
	// WritesChanged counts the statements that write (and the COMMITs of
	// transactions that wrote) whose outcome changed: the end state
	// likely differs after them. TablesChanged are the tables they wrote,
	// where the statement names one. WritesUntold counts the writing
	// statements that failed where the capture cannot tell whether they
	// failed in the application (ErrorsKnown false).
	WritesChanged, WritesUntold int64
	TablesChanged               []string
	// ServerRollbacks counts the transactions the replay rolled back
	// because the server had in the capture (a MySQL deadlock, which
	// ends the transaction without the client's ROLLBACK) where the
	// replay's statement succeeded.
	ServerRollbacks int64
	// Retries counts the times the replay ran a block again after a
	// deadlock or serialization failure the capture had not met.
	Retries int64
	// FromWire: the capture came from the wire (rows affected known).
	FromWire bool
	// Admin lists the statements skipped because they change the server
	// (fingerprint: count).
	Admin       map[string]int64
	Releases    []Release
	Stalls      []Stall
	Notes       []string
	Series      []metrics.Interval // statements completed per interval in Commits
	FirstErrors map[string]string  // first message per SQLSTATE
}

// Fingerprint is one normalised statement, captured and replayed.
type Fingerprint struct {
	Text     string
	Example  string // a captured text, literals and all: only when asked for
	Calls    int64  // captured executions
	Replayed int64
	// Errors in the capture and in the replay.
	CaptureErrors, ReplayErrors int64
	// Capture is the server's time from the log (successful statements
	// with a logged duration); Replay is dbparity's client time, the round
	// trip included; SyncWait the time its statements waited for other
	// sessions before they were sent.
	Capture, Replay, SyncWait *metrics.Histogram
}

// Outcome kinds.
const (
	Expected = "expected error" // failed in the capture, failed alike in the replay
	New      = "new error"      // succeeded in the capture, failed in the replay
	Vanished = "vanished error" // failed in the capture, succeeded in the replay
	Changed  = "changed error"  // failed in both, with different SQLSTATEs
	// A COMMIT that committed in the capture and rolled back in the replay
	// (its transaction failed), and the reverse.
	RolledBack = "rolled back"
	Committed  = "committed"
	// NoData: a statement whose data the log does not hold (COPY FROM
	// STDIN, run empty; a fast-path call, skipped): its effect is missing.
	NoData = "data not captured"
	// RowsDiffer: succeeded in both, with another count of rows affected
	// or returned than the capture's (wire captures keep them).
	RowsDiffer = "rows differ"
	// RolledBackAlike: a statement that ended otherwise than captured (a
	// new, changed or vanished error, other rows) inside a transaction
	// that rolled back in the capture and rolls back in the replay: the
	// transaction ends as captured, leaving nothing, so its outcome did
	// not change.
	RolledBackAlike = "rolled back alike"
	// Untold: failed in the replay where the capture cannot tell whether
	// it failed in the application (MySQL's and MariaDB's logs record no
	// errors).
	Untold = "log cannot tell"
)

// kindRank orders outcomes: divergence first, the expected last.
var kindRank = map[string]int{New: 0, Changed: 1, RolledBack: 2, RowsDiffer: 3, NoData: 4, Vanished: 5, Committed: 6,
	Untold: 7, RolledBackAlike: 8, Expected: 9}

// OutcomeChanged says whether an outcome kind is a change of outcome
// against the capture: not an expected error, nor one inside a
// transaction that ended as captured, nor one the capture cannot tell.
func OutcomeChanged(kind string) bool {
	return kind != Expected && kind != RolledBackAlike && kind != Untold
}

// Outcome counts statements of one fingerprint that ended one way.
type Outcome struct {
	Kind        string
	Fingerprint string
	// Captured is the SQLSTATE in the capture ("" none, "?" unknown: the
	// log did not carry it; for Untold, "" as the log says, which cannot
	// tell).
	Captured string
	Replayed string // SQLSTATE in the replay ("" none)
	Count    int64
	Message  string // the first replay error's message, or the capture's for a vanished error
}

// SessionDiff is a session whose replay differs from its capture in
// completed statements or commits.
type SessionDiff struct {
	ID, User, Database               string
	CapturedOK, ReplayedOK           int64
	CapturedCommits, ReplayedCommits int64
	CapturedErrors, ReplayedErrors   int64
}

// recorder gathers the sessions' measurements under one mutex: replay
// is bound by the server, and a statement takes far longer than the lock.
type recorder struct {
	mu       sync.Mutex
	fps      []Fingerprint
	fpOf     []int // text index -> fingerprint index
	kinds    []int // text index -> txKindOf
	outcomes map[[4]string]*Outcome
	sessions []sessionCount
	// capRolledBack marks the captured COMMITs whose transaction had
	// failed: the server answered ROLLBACK.
	capRolledBack map[[2]int]bool
	// capBlockRB marks the statements of the transaction blocks that
	// rolled back in the capture (ROLLBACK, a COMMIT answered ROLLBACK,
	// a session that ended inside its block).
	capBlockRB map[[2]int]bool
	repTx      []txState // each session's blocks in the replay
	// pend holds, per session, the outcomes of its replay's open block:
	// they count once the block ends, apart when it rolled back as its
	// capture did (RolledBackAlike). blockWrote: the block wrote, in
	// the capture, and where (a COMMIT whose outcome changed changed
	// those writes).
	pend        [][]pending
	lastStmt    []int // each session's last statement recorded
	blockWrote  []bool
	blockTables [][]string
	// writes and table are capture.Writes and capture.WrittenTable of
	// each capture text.
	writes      []bool
	table       []string
	errorsKnown bool
	tables      map[string]bool // TablesChanged
	keep        []bool          // the sessions the filters keep
	res         Result
	iv          metrics.Interval
	ivHist      *metrics.Histogram
	last        time.Time
	runStart    time.Time
	active      int
	lastLag     time.Duration
	issued      int64
}

// pending is an outcome held until its transaction block ends.
type pending struct {
	kind, fp, want, got, msg string
	writes                   bool // the statement (or the COMMIT's block) wrote
	tables                   []string
}

type sessionCount struct {
	okCapture, okReplay, errCapture, errReplay, commitCapture, commitReplay int64
	txCapture, txReplay                                                     int64
}

// newRecorder counts the capture's side. why is, per text, why it is not
// sent: statements left out by design (administrative, excluded by the
// user) count on neither side.
func newRecorder(c *capture.Capture, fps []string, fpOf, kinds []int, keep []bool, why []string, literals bool) *recorder {
	r := &recorder{fpOf: fpOf, kinds: kinds, outcomes: map[[4]string]*Outcome{}, ivHist: metrics.NewHistogram(),
		sessions: make([]sessionCount, len(c.Sessions)), capRolledBack: map[[2]int]bool{}, capBlockRB: map[[2]int]bool{},
		repTx: make([]txState, len(c.Sessions)), pend: make([][]pending, len(c.Sessions)), lastStmt: make([]int, len(c.Sessions)),
		blockWrote: make([]bool, len(c.Sessions)), blockTables: make([][]string, len(c.Sessions)),
		writes: make([]bool, len(c.Texts)), table: make([]string, len(c.Texts)), errorsKnown: c.ErrorsKnown(),
		tables: map[string]bool{}, keep: keep}
	for i, text := range c.Texts {
		r.writes[i] = capture.Writes(text)
		if r.writes[i] {
			r.table[i] = capture.WrittenTable(text)
		}
	}
	for s := range r.repTx {
		r.repTx[s].mysql = c.Engine == capture.EngineMySQL
	}
	for _, f := range fps {
		r.fps = append(r.fps, Fingerprint{Text: f, Capture: metrics.NewHistogram(), Replay: metrics.NewHistogram(),
			SyncWait: metrics.NewHistogram()})
	}
	r.res = Result{Latency: metrics.NewHistogram(), Commit: metrics.NewHistogram(), SyncWait: metrics.NewHistogram(),
		NotReplayed: map[string]int64{}, Admin: map[string]int64{}, FirstErrors: map[string]string{}}
	for si, s := range c.Sessions {
		r.res.Statements += int64(len(s.Statements))
		if !keep[si] {
			r.res.SessionsFiltered++
			continue
		}
		r.res.Sessions++
		tx := txState{mysql: c.Engine == capture.EngineMySQL}
		var block []int // the statements of the open block
		rolledBackBlock := func() {
			for _, k := range block {
				r.capBlockRB[[2]int{si, k}] = true
			}
		}
		for i, st := range s.Statements {
			text := c.Texts[st.Text]
			f := &r.fps[fpOf[st.Text]]
			f.Calls++
			if literals && f.Example == "" {
				f.Example = text
			}
			if w := why[st.Text]; w == skipAdmin || w == skipExcluded {
				continue
			}
			sc := &r.sessions[si]
			kind := kinds[st.Text]
			wasIn := tx.inBlock
			committed, rolledBack := tx.step(kind, errState(st.Error), "")
			if wasIn || tx.inBlock {
				block = append(block, i)
			}
			if wasIn && !tx.inBlock {
				if kind == txRollback || rolledBack {
					rolledBackBlock()
				}
				block = block[:0]
			}
			if committed {
				sc.txCapture++
				if kind == txCommit {
					sc.commitCapture++
				}
			}
			if rolledBack {
				r.capRolledBack[[2]int{si, i}] = true
			}
			if st.Error != nil {
				f.CaptureErrors++
				sc.errCapture++
				continue
			}
			sc.okCapture++
			if st.Duration > 0 {
				f.Capture.Record(st.Duration)
			}
		}
		if tx.inBlock {
			rolledBackBlock() // ended by the disconnection
		}
	}
	return r
}

func (r *recorder) start(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runStart, r.last = t, t
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.res.Notes {
		if n == s {
			return
		}
	}
	r.res.Notes = append(r.res.Notes, s)
}

func (r *recorder) sessionFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.SessionsFailed++
	if _, ok := r.res.FirstErrors["connection"]; !ok {
		r.res.FirstErrors["connection"] = err.Error()
	}
}

func (r *recorder) sessionStarted() { r.mu.Lock(); r.active++; r.mu.Unlock() }
func (r *recorder) sessionEnded()   { r.mu.Lock(); r.active--; r.mu.Unlock() }

// serverRollback counts a transaction the replay rolled back as the
// server had in the capture, at session s's statement i: its block ends
// there, rolled back as the capture's did, so that what its statements
// did otherwise than captured changed nothing.
func (r *recorder) serverRollback(s, i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.ServerRollbacks++
	if r.repTx[s].inBlock {
		r.repTx[s].step(txRollback, "", "")
		r.settle(s, r.capBlockRB[[2]int{s, i}])
	}
}

// retried counts a block run again after a deadlock the capture had not.
func (r *recorder) retried() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Retries++
}

func (r *recorder) skipped(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.NotReplayed[reason]++
}

// statement records statement i of session s: its time, its lag behind
// schedule, its wait for other sessions, and its outcome; how is why it
// was not sent as captured (capture.NoCopyData: run without its data).
func (r *recorder) statement(c *capture.Capture, s, i int, took, lag, waited time.Duration, tag string, err error, how string) {
	st := &c.Sessions[s].Statements[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &r.fps[r.fpOf[st.Text]]
	f.Replayed++
	r.res.Replayed++
	r.issued++
	sc := &r.sessions[s]
	if lag >= 0 {
		if r.res.Lag == nil {
			r.res.Lag = metrics.NewHistogram()
		}
		r.res.Lag.Record(lag)
		r.lastLag = lag
	}
	r.res.SyncWait.Record(waited)
	f.SyncWait.Record(waited)
	got := sqlState(err)
	want := ""
	if st.Error != nil {
		want = st.Error.SQLState
		if want == "" {
			want = "?"
		}
	}
	kind := r.kinds[st.Text]
	r.lastStmt[s] = i
	wasIn := r.repTx[s].inBlock
	committed, repRB := r.repTx[s].step(kind, got, tag)
	if committed {
		sc.txReplay++
	}
	if err != nil {
		r.res.Errors++
		f.ReplayErrors++
		sc.errReplay++
		r.iv.Errors++
		if _, ok := r.res.FirstErrors[got]; !ok {
			r.res.FirstErrors[got] = err.Error()
		}
	} else {
		r.res.OK++
		sc.okReplay++
		r.res.Latency.Record(took)
		f.Replay.Record(took)
		r.ivHist.Record(took)
		r.iv.Commits++
		if kind == txCommit && committed {
			sc.commitReplay++
			r.res.Commit.Record(took)
		}
	}
	capRB := r.capRolledBack[[2]int{s, i}]
	outcome, msg := "", ""
	switch {
	case how == capture.NoCopyData:
		outcome = NoData
	case want == "" && got == "" && repRB && !capRB:
		outcome = RolledBack
	case want == "" && got == "" && capRB && !repRB:
		outcome = Committed
	case want == "" && got == "":
		if st.Rows != nil {
			if n, ok := capture.TagRows(tag); ok {
				r.res.RowsCompared++
				if n != *st.Rows {
					outcome, msg = RowsDiffer, fmt.Sprintf("captured %d rows, replayed %d", *st.Rows, n)
				}
			}
		}
	case want == "" && !r.errorsKnown:
		outcome = Untold
	case want == "":
		outcome = New
	case got == "":
		outcome = Vanished
	case want == got || want == "?":
		outcome = Expected
	default:
		outcome = Changed
	}
	switch {
	case msg != "":
	case outcome == NoData:
		msg = how
	case err != nil:
		msg = err.Error()
	case st.Error != nil:
		msg = st.Error.Message
	}
	inBlock := r.repTx[s].inBlock
	// What the capture's block wrote, for its COMMIT.
	if wasIn || inBlock {
		if !wasIn {
			r.blockWrote[s], r.blockTables[s] = false, nil
		}
		if r.writes[st.Text] {
			r.blockWrote[s] = true
			if t := r.table[st.Text]; t != "" && !slices.Contains(r.blockTables[s], t) {
				r.blockTables[s] = append(r.blockTables[s], t)
			}
		}
	}
	if outcome != "" && outcome != Expected {
		p := pending{kind: outcome, fp: f.Text, want: want, got: got, msg: msg, writes: r.writes[st.Text]}
		if t := r.table[st.Text]; t != "" {
			p.tables = []string{t}
		}
		if kind == txCommit && (outcome == RolledBack || outcome == Committed) {
			p.writes, p.tables = r.blockWrote[s], r.blockTables[s]
		}
		if wasIn || inBlock {
			r.pend[s] = append(r.pend[s], p)
		} else {
			r.count(p, false)
		}
	} else if outcome == Expected {
		r.outcome(outcome, f.Text, want, got, msg)
	}
	if wasIn && !inBlock {
		// The block ended: its outcomes changed nothing when it rolled
		// back, as it did in the capture.
		r.settle(s, (kind == txRollback || repRB) && r.capBlockRB[[2]int{s, i}])
	}
}

// settle counts session s's pending outcomes, as RolledBackAlike when
// their transaction ended as captured, rolled back; call with mu held.
func (r *recorder) settle(s int, alike bool) {
	for _, p := range r.pend[s] {
		r.count(p, alike)
	}
	r.pend[s] = r.pend[s][:0]
}

// count counts one outcome; call with mu held.
func (r *recorder) count(p pending, alike bool) {
	if alike {
		r.outcome(RolledBackAlike, p.fp, p.want, p.got, p.msg)
		return
	}
	r.outcome(p.kind, p.fp, p.want, p.got, p.msg)
	switch {
	case !p.writes:
	case p.kind == Untold:
		r.res.WritesUntold++
	case OutcomeChanged(p.kind):
		r.res.WritesChanged++
		for _, t := range p.tables {
			r.tables[t] = true
		}
	}
}

// sessionDone settles session s's outcomes still pending when it ends:
// its connection closed inside a block, which the server rolls back, as
// it did in the capture when the capture's block never ended either; a
// replay stopped before counts them as they are.
func (r *recorder) sessionDone(s int, stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pend[s]) == 0 {
		return
	}
	alike := false
	if !stopped && r.repTx[s].inBlock {
		// The last statement sent decides: its capture's block rolled back.
		alike = r.capBlockRB[[2]int{s, r.lastStmt[s]}]
	}
	r.settle(s, alike)
}

// outcome counts one statement that ended a way worth reporting; call
// with mu held.
func (r *recorder) outcome(kind, fp, want, got, msg string) {
	key := [4]string{kind, fp, want, got}
	o := r.outcomes[key]
	if o == nil {
		o = &Outcome{Kind: kind, Fingerprint: fp, Captured: want, Replayed: got, Message: msg}
		r.outcomes[key] = o
	}
	o.Count++
}

// notSent records a statement that was not sent: skipped (with why), or
// the data not captured (a fast-path call); admin names what an
// administrative statement does.
func (r *recorder) notSent(c *capture.Capture, s, i int, why string) {
	st := &c.Sessions[s].Statements[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.NotReplayed[why]++
	fp := r.fps[r.fpOf[st.Text]].Text
	switch why {
	case capture.NoFastPathArg:
		r.outcome(NoData, fp, "", "", why)
	case skipAdmin:
		r.res.Admin[fp]++
	}
}

// tick closes the series' interval ending now.
func (r *recorder) tick(now time.Time) (Progress, metrics.Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	iv := r.iv
	iv.At, iv.Seconds, iv.Phase = now.Sub(r.runStart).Seconds(), now.Sub(r.last).Seconds(), "measure"
	iv.P50Micros = r.ivHist.Quantile(0.50).Microseconds()
	iv.P95Micros = r.ivHist.Quantile(0.95).Microseconds()
	iv.P99Micros = r.ivHist.Quantile(0.99).Microseconds()
	iv.ActiveSess = r.active
	if iv.Seconds > 0 {
		r.res.Series = append(r.res.Series, iv)
	}
	r.iv = metrics.Interval{}
	r.ivHist.Reset()
	r.last = now
	return Progress{Elapsed: now.Sub(r.runStart), Issued: r.issued, Total: r.res.Statements, Errors: r.res.Errors,
		Lag: r.lastLag, ActiveSessions: r.active, StatementsPerSec: iv.TPS()}, iv
}

func (r *recorder) result(c *capture.Capture, o Options, start, end time.Time) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.pend {
		r.settle(s, false) // a session that never ended (it cannot: each settles as it ends)
	}
	res := r.res
	res.Start, res.End = start, end
	res.FromWire = c.FromWire()
	res.TablesChanged = nil
	for t := range r.tables {
		res.TablesChanged = append(res.TablesChanged, t)
	}
	sort.Strings(res.TablesChanged)
	res.CaptureSeconds, res.ReplaySeconds = c.End.Sub(c.Start).Seconds(), end.Sub(start).Seconds()
	res.Speed, res.Sync = o.Speed, o.Sync
	res.Fingerprints = append([]Fingerprint(nil), r.fps...)
	// Top regressions first: the most replay time added over the capture.
	added := func(f Fingerprint) float64 {
		return float64(f.Replay.Count()) * (f.Replay.Mean().Seconds() - f.Capture.Mean().Seconds())
	}
	sort.SliceStable(res.Fingerprints, func(a, b int) bool { return added(res.Fingerprints[a]) > added(res.Fingerprints[b]) })
	for _, o := range r.outcomes {
		res.Outcomes = append(res.Outcomes, *o)
	}
	sort.Slice(res.Outcomes, func(a, b int) bool {
		x, y := res.Outcomes[a], res.Outcomes[b]
		if x.Kind != y.Kind {
			return kindRank[x.Kind] < kindRank[y.Kind]
		}
		return x.Count > y.Count
	})
	for i, sc := range r.sessions {
		res.CapturedCommits += sc.commitCapture
		res.ReplayedCommits += sc.commitReplay
		res.CapturedTransactions += sc.txCapture
		res.ReplayedTransactions += sc.txReplay
		if !r.keep[i] {
			continue
		}
		if sc.okCapture != sc.okReplay || sc.commitCapture != sc.commitReplay || sc.errCapture != sc.errReplay {
			s := c.Sessions[i]
			res.SessionDiffs = append(res.SessionDiffs, SessionDiff{ID: s.ID, User: s.User, Database: s.Database,
				CapturedOK: sc.okCapture, ReplayedOK: sc.okReplay, CapturedCommits: sc.commitCapture,
				ReplayedCommits: sc.commitReplay, CapturedErrors: sc.errCapture, ReplayedErrors: sc.errReplay})
		}
	}
	return &res
}
