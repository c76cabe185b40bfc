package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dbparity/dbparity/internal/result"
)

// A report's answer is graded by written rules (docs/statistics.md, "The
// grade"): each thing that undermines it is a Caveat of one Kind, and the
// kind says whether it leaves the answer to be read with care or makes
// it no finding at all. Caveats are shown grouped by kind, one line each
// with how many runs and the worst case; the runs' names go to a details
// section.

// Grade is how far an answer can be acted on.
type Grade int

const (
	// Trustworthy: nothing the rules know of undermines the answer.
	Trustworthy Grade = iota
	// ReadWithCare: the answer stands, but something bends it; the
	// caveats say what and how much.
	ReadWithCare
	// NotAFinding: the runs cannot support the answer (the driver or
	// other work set the figure, a group is not one platform, the runs
	// give no useful interval).
	NotAFinding
)

func (g Grade) String() string {
	switch g {
	case Trustworthy:
		return "TRUSTWORTHY"
	case ReadWithCare:
		return "READ WITH CARE"
	}
	return "NOT A FINDING"
}

// MarshalText writes the grade as its words.
func (g Grade) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// Kind is a kind of caveat.
type Kind string

// The kinds of caveat, in the order a report lists them: the grade's
// worst first, and within a grade the most telling first (rank). A
// NOT A FINDING names the first of its kinds: that the runs are not one
// platform, or shared one host, says more than the noise that follows
// from it.
const (
	KindFailed         Kind = "failed"
	KindNotOnePlatform Kind = "not-one-platform"
	KindOneHost        Kind = "one-host"
	KindEndState       Kind = "end-state"
	KindDriverBound    Kind = "driver-bound"
	KindHostBusy       Kind = "host-busy"
	KindNoInterval     Kind = "no-interval"
	KindPartial        Kind = "partial"
	KindOutage         Kind = "outage"
	KindReconnect      Kind = "reconnect"
	KindBehind         Kind = "behind"
	KindHostShared     Kind = "host-shared"
	KindSteal          Kind = "steal"
	KindDrift          Kind = "drift"
	KindVariation      Kind = "variation"
	KindFewRuns        Kind = "few-runs"
	KindLowCPU         Kind = "low-cpu"
	KindFlatCPU        Kind = "flat-cpu"
	KindNotCPUBound    Kind = "not-cpu-bound"
	KindBuild          Kind = "build"
	KindLag            Kind = "lag"
	KindOutcomes       Kind = "outcomes"
	KindUnverified     Kind = "unverified"
)

// rank orders the kinds within a grade (the constants' order).
var rank = []Kind{KindFailed, KindNotOnePlatform, KindOneHost, KindEndState, KindDriverBound, KindHostBusy, KindNoInterval,
	KindPartial, KindOutage, KindReconnect, KindBehind, KindHostShared, KindSteal, KindDrift, KindVariation, KindFewRuns,
	KindLowCPU, KindFlatCPU, KindNotCPUBound, KindBuild, KindLag, KindOutcomes, KindUnverified}

// kindInfo is what a kind does to the grade and how its line reads:
// "TITLE: 3 of 12 runs RUNS (worst: FILE, DETAIL)".
type kindInfo struct {
	grade Grade
	title string
	runs  string
}

var kinds = map[Kind]kindInfo{
	KindFailed:         {NotAFinding, "FAILED", "failed"},
	KindDriverBound:    {NotAFinding, "DRIVER-BOUND", "were limited by the driver, not the platform"},
	KindHostBusy:       {NotAFinding, "HOST BUSY", "shared their database host with other processes using a quarter of its CPUs or more"},
	KindNotOnePlatform: {NotAFinding, "NOT ONE PLATFORM", "differ from their group's first run in a server fact"},
	KindOneHost:        {NotAFinding, "ONE HOST", "ran their targets on fewer database hosts than targets: a host shared, not hosts added"},
	KindNoInterval:     {NotAFinding, "NO INTERVAL", ""},
	KindEndState:       {NotAFinding, "END STATE DIFFERS", "ended with data unlike the application's"},
	KindPartial:        {ReadWithCare, "PARTIAL", "were cut short"},
	KindHostShared:     {ReadWithCare, "HOST SHARED", "shared their database host with other processes"},
	KindDrift:          {ReadWithCare, "NOT STATIONARY", "drifted more than 10% in throughput within their window"},
	KindOutage:         {ReadWithCare, "OUTAGES", "had the server stop serving for part of the window"},
	KindReconnect:      {ReadWithCare, "RECONNECTS", "lost connections and reconnected"},
	KindBehind:         {ReadWithCare, "BEHIND", "could not keep their target rate"},
	KindSteal:          {ReadWithCare, "CPU STOLEN", "lost more than 2% of the CPU to the hypervisor"},
	KindVariation:      {ReadWithCare, "HIGH VARIATION", ""},
	KindFewRuns:        {ReadWithCare, "FEW RUNS", ""},
	KindLowCPU:         {ReadWithCare, "LOW UTILISATION", ""},
	KindFlatCPU:        {ReadWithCare, "CPU DOES NOT RISE", ""},
	KindNotCPUBound:    {ReadWithCare, "NOT CPU-BOUND", ""},
	KindLag:            {ReadWithCare, "BEHIND PACE", "fell behind the capture's pace"},
	KindOutcomes:       {ReadWithCare, "OUTCOMES CHANGED", "had statements end otherwise than in the capture"},
	KindUnverified:     {ReadWithCare, "END STATE NOT CHECKED", "were not verified against the application's end state (--verify END.snap)"},
	KindBuild:          {ReadWithCare, "BUILD DIFFERS", ""},
}

// fewRuns is the share of the runs behind an answer below which a run
// kind that is no finding (the driver or other processes set a run's
// figure) only bends it: one run of 18 on a busy host moves a median
// little, and the line names it.
const fewRuns = 0.25

// shareKinds are the run kinds whose grade depends on how many runs have
// them (fewRuns).
var shareKinds = []Kind{KindDriverBound, KindHostBusy}

// gradeOf is the grade kind k's caveats give an answer of runs runs.
func gradeOf(k Kind, cs []Caveat, runs int) Grade {
	g := kinds[k].grade
	if !slices.Contains(shareKinds, k) || runs == 0 {
		return g
	}
	files := map[string]bool{}
	for _, c := range cs {
		files[c.File] = true
	}
	if float64(len(files)) < fewRuns*float64(runs) {
		return ReadWithCare
	}
	return g
}

// Caveat is one thing that undermines an answer: in one run (File), or
// in the comparison as a whole (File "").
type Caveat struct {
	Kind Kind   `json:"kind"`
	File string `json:"file,omitempty"`
	// Size ranks the cases of one kind: the worst is named.
	Size float64 `json:"-"`
	// Detail is this case's figure, short ("+20%", "0.22 cores"); Text
	// the whole sentence.
	Detail string `json:"detail,omitempty"`
	Text   string `json:"text"`
}

// MarshalJSON writes the caveat with its whole sentence, a run's made
// from its kind's words: "x.json: drifted more than 10% ... (+20%)".
func (c Caveat) MarshalJSON() ([]byte, error) {
	type plain Caveat
	p := plain(c)
	if p.Text == "" {
		p.Text = strings.TrimSpace(c.File+" "+singular(kinds[c.Kind].runs)) + " (" + c.Detail + ")"
		if c.Detail == "" {
			p.Text = strings.TrimSpace(c.File + " " + singular(kinds[c.Kind].runs))
		}
	}
	return json.Marshal(struct {
		plain
		Grade Grade `json:"grade"`
	}{p, c.Grade()})
}

// Grade is what the caveat does to the answer.
func (c Caveat) Grade() Grade { return kinds[c.Kind].grade }

// Assessment is an answer's grade with its caveats grouped by kind.
type Assessment struct {
	Grade Grade `json:"grade"`
	// Label is the grade as the report prints it: "TRUSTWORTHY", "READ
	// WITH CARE (2 reasons)", "NOT A FINDING (DRIVER-BOUND)": the first
	// kind that makes it no finding.
	Label string `json:"label"`
	// Lines are the caveats, one line a kind, worst grade first.
	Lines []string `json:"caveats"`
	// Runs name, per kind, the runs behind its line.
	Runs []KindRuns `json:"runs,omitempty"`
}

// KindRuns are the runs behind one line of an assessment.
type KindRuns struct {
	Title string   `json:"title"`
	Files []string `json:"files"`
}

// Assess grades an answer from its caveats; runs is the number of runs
// behind it ("3 of 12 runs").
func Assess(cs []Caveat, runs int) Assessment {
	a := Assessment{Grade: Trustworthy}
	order := []Kind{}
	byKind := map[Kind][]Caveat{}
	for _, c := range cs {
		if _, ok := byKind[c.Kind]; !ok {
			order = append(order, c.Kind)
		}
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	grade := func(k Kind) Grade { return gradeOf(k, byKind[k], runs) }
	slices.SortFunc(order, func(x, y Kind) int {
		return cmp.Or(cmp.Compare(grade(y), grade(x)), cmp.Compare(slices.Index(rank, x), slices.Index(rank, y)))
	})
	why := ""
	for _, k := range order {
		group := byKind[k]
		info := kinds[k]
		a.Grade = max(a.Grade, grade(k))
		line := groupLine(k, group, runs)
		a.Lines = append(a.Lines, line)
		if grade(k) == NotAFinding && why == "" {
			why = info.title
		}
		var files []string
		for _, c := range group {
			if c.File != "" && !slices.Contains(files, c.File) {
				files = append(files, c.File)
			}
		}
		if len(files) > 0 {
			a.Runs = append(a.Runs, KindRuns{Title: info.title, Files: files})
		}
	}
	switch a.Grade {
	case Trustworthy:
		a.Label = "TRUSTWORTHY"
	case ReadWithCare:
		a.Label = fmt.Sprintf("READ WITH CARE (%d %s)", len(order), plural(len(order), "reason", "reasons"))
	default:
		a.Label = "NOT A FINDING (" + why + ")"
	}
	return a
}

// groupLine is one kind's line. A kind of runs counts them and names
// the worst case: "NOT STATIONARY: 3 of 12 runs drifted ... (worst: FILE,
// +20%)", "... the run drifted ..." for one run alone; a kind of the
// whole comparison gives its sentences.
func groupLine(k Kind, cs []Caveat, runs int) string {
	info := kinds[k]
	var cases []Caveat
	var texts []string
	for _, c := range cs {
		switch {
		case c.Text != "" || info.runs == "":
			if !slices.Contains(texts, c.Text) {
				texts = append(texts, c.Text)
			}
		default:
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return info.title + ": " + strings.Join(texts, "; ")
	}
	files := map[string]bool{}
	for _, c := range cases {
		files[c.File] = true
	}
	n := len(files)
	line := fmt.Sprintf("%s: %d of %d %s %s", info.title, n, max(runs, n), plural(max(runs, n), "run", "runs"), info.runs)
	if runs <= 1 {
		line = fmt.Sprintf("%s: the run %s", info.title, singular(info.runs))
	}
	worst := slices.MaxFunc(cases, func(x, y Caveat) int { return cmp.Compare(x.Size, y.Size) })
	var where []string
	for _, w := range []string{worst.File, worst.Detail} {
		if w != "" {
			where = append(where, w)
		}
	}
	switch {
	case len(where) > 0 && n > 1:
		line += " (worst: " + strings.Join(where, ", ") + ")"
	case len(where) > 0:
		line += " (" + strings.Join(where, ", ") + ")"
	}
	if len(texts) > 0 {
		line += "; " + strings.Join(texts, "; ")
	}
	return line
}

// singular turns a kind's words about runs into words about one run.
func singular(s string) string {
	for _, v := range [][2]string{{"were ", "was "}, {"differ ", "differs "}} {
		if rest, ok := strings.CutPrefix(s, v[0]); ok {
			s = v[1] + rest
		}
	}
	return strings.ReplaceAll(s, " their ", " its ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// hostBusyShare is the share of the database host's CPUs that other
// processes must use for a run's figures to be theirs as much as the
// platform's.
const hostBusyShare = 0.25

// RunCaveats are what undermines one run's figures: it failed, was cut
// short, had outages, was driver-bound, shared its database host, could
// not keep its rate, lost CPU to the hypervisor, drifted, or ran several
// targets on fewer hosts. file names the run.
func RunCaveats(r *result.Run, file string) []Caveat {
	var out []Caveat
	add := func(k Kind, size float64, detail, text string) {
		out = append(out, Caveat{Kind: k, File: file, Size: size, Detail: detail, Text: text})
	}
	if r.Failed {
		add(KindFailed, 1, r.FailedReason, "")
	}
	if r.Partial && !(r.Failed && r.PartialReason == "aborted: "+r.FailedReason) {
		add(KindPartial, 1, r.PartialReason, "")
	}
	if n, secs := outages(r); n > 0 {
		add(KindOutage, secs, fmt.Sprintf("%d outage(s), %.1f s, %d transactions failed in them", n, secs, outageFailures(r)), "")
	} else if len(r.Events) > 0 {
		add(KindReconnect, float64(len(r.Events)), fmt.Sprintf("%d time(s)", len(r.Events)), "")
	}
	if r.Driver.Bound {
		add(KindDriverBound, 1, r.Driver.BoundReason, "")
	}
	if rt := r.Driver.Rate; rt != nil && rt.Behind {
		add(KindBehind, rt.MaxLagS, rt.BehindReason, "")
	}
	if r.OS.HasWindow() && r.OS.Window.CPUStealPct > 2 {
		add(KindSteal, r.OS.Window.CPUStealPct, fmt.Sprintf("%.1f%%", r.OS.Window.CPUStealPct), "")
	}
	if c := Contended(r); c > 0 {
		k, n := KindHostShared, r.OS.Window.NumCPU
		if n > 0 && c >= hostBusyShare*float64(n) {
			k = KindHostBusy
		}
		add(k, c, fmt.Sprintf("%.2f cores of %d", c, n), "")
	}
	if d := Drift(r); math.Abs(d) > driftLimit {
		add(KindDrift, math.Abs(d), fmt.Sprintf("%+.0f%%", 100*d), "")
	}
	if n, h := len(r.Parts), r.DatabaseHosts(); n > 1 && h < n {
		add(KindOneHost, float64(n)/float64(h), fmt.Sprintf("%d targets on %d host(s)", n, h), "")
	}
	if rp := r.Replay; rp != nil {
		if rp.EndStateDiffers() {
			what := strings.TrimPrefix(rp.EndState.Summary, "end state: ")
			if n := len(rp.Releases); n > 0 {
				// The likeliest cause a reader can act on: the replay let
				// sessions run in another order than the capture's there.
				what += fmt.Sprintf("; the replay released %d synchronisation %s to break cycles with the server's lock waits, and the sessions ran in another order there",
					n, plural(n, "wait", "waits"))
			}
			add(KindEndState, 1, what, "")
		}
		if l := rp.Lag; l != nil && l.MaxMs > 1000 {
			add(KindLag, l.MaxMs, fmt.Sprintf("lag p50 %s, max %s", Seconds(l.P50Ms/1000), Seconds(l.MaxMs/1000)), "")
		}
		if n := rp.Divergent(); n > 0 {
			add(KindOutcomes, float64(n), fmt.Sprintf("%d statements", n), "")
		}
		if rp.EndState == nil {
			add(KindUnverified, 1, "", "")
		}
	}
	return out
}

// Seconds writes a time for a reader: "12.1 s", "350 ms".
func Seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", 1000*s)
	}
	return fmt.Sprintf("%.1f s", s)
}

// GroupCaveats are the caveats of every run of the groups, and of the
// groups that are not one platform.
func GroupCaveats(gs ...Group) []Caveat {
	var out []Caveat
	for _, g := range gs {
		for i, r := range g.Runs {
			out = append(out, RunCaveats(r, fileOf(g, i))...)
		}
		for _, n := range WithinGroup(g) {
			out = append(out, Caveat{Kind: KindNotOnePlatform, Text: n})
		}
	}
	return out
}

// VerdictCaveats are what a headline verdict's own statistics undermine:
// no interval (too few runs, or one too wide to inform), or a resolution
// coarser than 5%.
func VerdictCaveats(v Verdict) []Caveat {
	switch {
	case v.Insufficient != "":
		return []Caveat{{Kind: KindNoInterval, Text: v.Insufficient}}
	case v.Resolution > 0.05:
		return []Caveat{{Kind: KindVariation, Text: fmt.Sprintf("the smallest difference %s would find 4 times in 5 is %.0f%%; more runs narrow it (as the square root of their number)",
			v.sample(), 100*v.Resolution)}}
	}
	return nil
}
