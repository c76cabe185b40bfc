package result

// Replay is what a replay did beside its capture (workload "replay").
// Statements appear as fingerprints, literals replaced; Example texts are
// kept only when the replay was asked to (--show-literals).
type Replay struct {
	Capture        string  `json:"capture"` // the capture file
	CaptureSeconds float64 `json:"capture_s"`
	ReplaySeconds  float64 `json:"replay_s"`
	Speed          float64 `json:"speed"` // 0: as fast as possible
	// Sync is "capture" (statements wait for what the capture proves
	// happened before) or "none"; Order is the timing model of replays
	// before synchronisation existed ("session" or "global").
	Sync           string `json:"sync,omitempty"`
	Order          string `json:"order,omitempty"`
	Sessions       int    `json:"sessions"`
	SessionsFailed int    `json:"sessions_failed"`
	// SessionsFiltered were left out by the session filters.
	SessionsFiltered int `json:"sessions_filtered,omitempty"`
	// Statements captured; Replayed issued (OK and Errors).
	Statements int64 `json:"statements"`
	Replayed   int64 `json:"replayed"`
	// RowsCompared counts the statements whose rows affected or returned
	// were compared with the capture's (a wire capture has them).
	RowsCompared int64            `json:"rows_compared,omitempty"`
	OK           int64            `json:"ok"`
	Errors       int64            `json:"errors"`
	NotReplayed  map[string]int64 `json:"not_replayed,omitempty"` // by reason
	// Lag behind the schedule when each statement was issued (absent as
	// fast as possible).
	Lag *Histogram `json:"lag,omitempty"`
	// SyncWait is how long statements waited for other sessions'
	// statements before they were sent (sync capture).
	SyncWait        *Histogram `json:"sync_wait,omitempty"`
	CapturedCommits int64      `json:"captured_commits"` // COMMITs that committed
	ReplayedCommits int64      `json:"replayed_commits"`
	// Transactions committed, explicit blocks and autocommit statements
	// alike, counted the same way in the capture and the replay.
	CapturedTransactions int64 `json:"captured_transactions"`
	ReplayedTransactions int64 `json:"replayed_transactions"`
	// WritesChanged counts the statements that write (and the COMMITs of
	// transactions that wrote) whose outcome changed against the
	// capture: without EndState, the end state likely differs after them.
	// TablesChanged are the tables they wrote (where a statement names
	// one); FromWire says the capture came from the wire, whose rows
	// affected the replay compares, so that those are the tables whose
	// rows may differ. WritesUntold counts the writing statements that
	// failed where the capture cannot tell whether they failed in the
	// application (MySQL's and MariaDB's logs record no errors).
	WritesChanged int64    `json:"writes_changed,omitempty"`
	TablesChanged []string `json:"tables_changed,omitempty"`
	WritesUntold  int64    `json:"writes_untold,omitempty"`
	// ServerRollbacks: transactions the replay rolled back itself where
	// the server had rolled them back in the capture (a MySQL deadlock)
	// and the replay's statement succeeded.
	ServerRollbacks int64 `json:"server_rollbacks,omitempty"`
	// Retries: how many times the replay ran a transaction block again,
	// from its BEGIN, after a deadlock or serialization failure the
	// capture had not met (the server chose another victim than in the
	// capture).
	Retries  int64 `json:"retries,omitempty"`
	FromWire bool  `json:"from_wire,omitempty"`
	// Admin are the statements skipped because they change the server
	// (fingerprint: count); --replay-admin sends them.
	Admin map[string]int64 `json:"admin_skipped,omitempty"`
	// Releases are the synchronisation waits let go to break a cycle with
	// the server's lock waits; Stalls the statements and waits that lasted
	// past the stall timeout.
	Releases []ReplayRelease `json:"sync_released,omitempty"`
	Stalls   []ReplayStall   `json:"stalls,omitempty"`
	// Typing is what parameter typing by inference did.
	Typing *ReplayTyping `json:"typing,omitempty"`
	// EndState is the target against the expected end state (--verify);
	// Verify names the snapshot asked for, and EndStateSkipped says why
	// it was not compared (the replay was interrupted, the target could
	// not be read).
	EndState        *EndState           `json:"end_state,omitempty"`
	Verify          string              `json:"verify,omitempty"`
	EndStateSkipped string              `json:"end_state_skipped,omitempty"`
	Fingerprints    []ReplayFingerprint `json:"fingerprints"` // most replay time added first
	Outcomes        []ReplayOutcome     `json:"outcomes,omitempty"`
	SessionDiffs    []ReplaySessionDiff `json:"session_diffs,omitempty"`
	Notes           []string            `json:"notes,omitempty"`
	Literals        bool                `json:"literals"`
}

// ReplayFingerprint is one normalised statement: the capture's server
// time (from the log) against the replay's client time.
type ReplayFingerprint struct {
	Text          string    `json:"text"`
	Example       string    `json:"example,omitempty"`
	Calls         int64     `json:"calls"`
	Replayed      int64     `json:"replayed"`
	CaptureErrors int64     `json:"capture_errors"`
	ReplayErrors  int64     `json:"replay_errors"`
	Capture       Histogram `json:"capture"`
	Replay        Histogram `json:"replay"`
	// SyncWait is the time its statements waited for other sessions.
	SyncWait *Histogram `json:"sync_wait,omitempty"`
}

// ReplayOutcome counts the statements of one fingerprint whose replay
// ended one way against their capture: "new error", "vanished error",
// "changed error", "rolled back", "committed", "data not captured",
// "rows differ" (outcome changes); "rolled back alike" (ended otherwise
// inside a transaction that rolled back in the capture and in the
// replay: no change), "log cannot tell" (failed where the capture has no
// errors to compare with) or "expected error".
type ReplayOutcome struct {
	Kind        string `json:"kind"`
	Fingerprint string `json:"fingerprint"`
	Captured    string `json:"captured_sqlstate"` // "" none, "?" not in the log
	Replayed    string `json:"replayed_sqlstate"`
	Count       int64  `json:"count"`
	Message     string `json:"message,omitempty"`
}

// ReplaySessionDiff is a session whose replay completed a different
// number of statements, commits or errors than its capture.
type ReplaySessionDiff struct {
	ID              string `json:"id"`
	User            string `json:"user"`
	Database        string `json:"database"`
	CapturedOK      int64  `json:"captured_ok"`
	ReplayedOK      int64  `json:"replayed_ok"`
	CapturedCommits int64  `json:"captured_commits"`
	ReplayedCommits int64  `json:"replayed_commits"`
	CapturedErrors  int64  `json:"captured_errors"`
	ReplayedErrors  int64  `json:"replayed_errors"`
}

// Outcome kinds that are not a change of outcome.
const (
	OutcomeExpected        = "expected error"
	OutcomeRolledBackAlike = "rolled back alike"
	OutcomeUntold          = "log cannot tell"
)

// Changed says whether the outcome is a change against the capture.
func (o ReplayOutcome) Changed() bool {
	return o.Kind != OutcomeExpected && o.Kind != OutcomeRolledBackAlike && o.Kind != OutcomeUntold
}

// Divergent counts the replayed statements whose outcome changed against
// the capture's: not those that failed otherwise inside a transaction
// that rolled back as captured (RolledBackAlike), nor those the capture
// cannot tell (Untold).
func (r *Replay) Divergent() int64 {
	var n int64
	for _, o := range r.Outcomes {
		if o.Changed() {
			n += o.Count
		}
	}
	return n
}

// RolledBackAlike counts the statements that ended otherwise than
// captured inside transactions that rolled back in both.
func (r *Replay) RolledBackAlike() int64 { return r.kind(OutcomeRolledBackAlike) }

// Untold counts the statements that failed where the capture cannot tell
// whether they failed in the application.
func (r *Replay) Untold() int64 { return r.kind(OutcomeUntold) }

func (r *Replay) kind(k string) int64 {
	var n int64
	for _, o := range r.Outcomes {
		if o.Kind == k {
			n += o.Count
		}
	}
	return n
}

// EndStateDiffers says whether the replay was verified and its end state
// differs from the expected one (beyond columns the clock sets).
func (r *Replay) EndStateDiffers() bool {
	es := r.EndState
	return es != nil && (es.Match+es.ClockOnly+es.Explained < es.Of || len(es.Sequences) > 0)
}

// ReplayRelease is a synchronisation wait let go to break a cycle.
type ReplayRelease struct {
	AtS       float64 `json:"at_s"` // from the replay's start
	Session   string  `json:"session"`
	Statement int     `json:"statement"` // its index in the session
	WaitedS   float64 `json:"waited_s"`
	Cycle     string  `json:"cycle"`
}

// ReplayStall is a statement that ran, or a session that waited for
// synchronisation, past the stall timeout.
type ReplayStall struct {
	AtS         float64 `json:"at_s"`
	Session     string  `json:"session"`
	Statement   int     `json:"statement"`
	Fingerprint string  `json:"fingerprint"`
	Seconds     float64 `json:"seconds"`
	What        string  `json:"what"` // statement or synchronisation
	Waiting     string  `json:"waiting"`
}

// ReplayTyping is what parameter typing by inference did.
type ReplayTyping struct {
	Texts      int   `json:"texts"`
	Params     int   `json:"params"`
	Executions int64 `json:"executions"`
	Failed     int   `json:"failed"`
}

// EndState is the target's tables against an expected end state.
type EndState struct {
	Expected  string `json:"expected"` // where the snapshot was taken
	Summary   string `json:"summary"`
	Match     int    `json:"match"`
	ClockOnly int    `json:"clock_only"` // match apart from date/time columns
	// Explained differ for a cause the report names (data the capture
	// does not hold, values set at random by the application's statements).
	Explained int        `json:"explained,omitempty"`
	Of        int        `json:"of"`
	Tables    []EndTable `json:"tables"`
	Sequences []string   `json:"sequences_differ,omitempty"`
}

// EndTable is one table against its expected state.
type EndTable struct {
	Name     string   `json:"name"`
	Verdict  string   `json:"verdict"`
	WantRows int64    `json:"want_rows"`
	GotRows  int64    `json:"got_rows"`
	Columns  []string `json:"columns,omitempty"`
	Cause    string   `json:"cause,omitempty"` // why it differs, when explained
	// After: the replay's divergent statements that wrote it, when it
	// differs.
	After string `json:"after,omitempty"`
}
