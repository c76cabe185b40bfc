package result

// Replay is what a replay did beside its capture (workload "replay").
// Statements appear as fingerprints, literals replaced; Example texts are
// kept only when the replay was asked to (--show-literals).
type Replay struct {
	Capture        string  `json:"capture"` // the capture file
	CaptureSeconds float64 `json:"capture_s"`
	ReplaySeconds  float64 `json:"replay_s"`
	Speed          float64 `json:"speed"` // 0: as fast as possible
	Order          string  `json:"order"`
	Sessions       int     `json:"sessions"`
	SessionsFailed int     `json:"sessions_failed"`
	// Statements captured; Replayed issued (OK and Errors).
	Statements  int64            `json:"statements"`
	Replayed    int64            `json:"replayed"`
	OK          int64            `json:"ok"`
	Errors      int64            `json:"errors"`
	NotReplayed map[string]int64 `json:"not_replayed,omitempty"` // by reason
	// Lag behind the schedule when each statement was issued (absent as
	// fast as possible).
	Lag             *Histogram          `json:"lag,omitempty"`
	CapturedCommits int64               `json:"captured_commits"`
	ReplayedCommits int64               `json:"replayed_commits"`
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
}

// ReplayOutcome counts the statements of one fingerprint whose replay
// ended one way against their capture: "new error", "vanished error",
// "changed error" (divergence) or "expected error".
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

// Divergent counts the replayed statements whose outcome differs from
// the capture's.
func (r *Replay) Divergent() int64 {
	var n int64
	for _, o := range r.Outcomes {
		if o.Kind != "expected error" {
			n += o.Count
		}
	}
	return n
}
