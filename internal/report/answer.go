package report

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
)

// Answer is what a comparison opens with: the study's own figure in one
// sentence per group against the baseline, with its interval and the
// direction in words; the grade the caveats give it (docs/statistics.md,
// "The grade"); and what a reader needs beside the figure to read it.
type Answer struct {
	Sentences  []string           `json:"sentences"`
	Assessment compare.Assessment `json:"assessment"`
	// Notes explain the figure where the report shows another that looks
	// alike (why the equal-CPU interval is tighter than the top step's).
	Notes []string `json:"notes,omitempty"`
}

// Answer builds the comparison's answer. The study decides the figure: a
// sweep's is throughput at equal CPU, or the gain per doubling where
// there is no equal-CPU point; several targets per run, the efficiency
// of the targets added; replays, pace and end state; otherwise the
// throughput verdict, with the servers' versions and builds when those
// differ.
func (c *Comparison) Answer() Answer {
	var a Answer
	cs := compare.GroupCaveats(c.all...)
	s := c.Sweep
	if s != nil { // the runs' caveats, and the curves'
		cs = append([]compare.Caveat(nil), s.Caveats...)
	}
	runs := 0
	for _, g := range c.all {
		runs += len(g.Runs)
	}
	switch {
	case s != nil && !math.IsNaN(s.EqualAt) && len(s.EqualCPU) > 1:
		for _, e := range s.EqualCPU[1:] {
			at := fmt.Sprintf(" at equal CPU (%.1f%%)", s.EqualAt)
			sentence, caveat := ratioSentence(e.Label, s.Groups[0].Label, e.Ratio, e.Lo, e.Hi, at, "bootstrap over every step's runs")
			a.Sentences = append(a.Sentences, sentence)
			cs = append(cs, caveat...)
		}
		if len(c.Groups) > 1 && c.AtStep != "" {
			a.Notes = append(a.Notes, fmt.Sprintf("the equal-CPU interval draws on the runs of every step (%d), through each group's curve; the verdict at %s in the table below rests on that step's runs alone, so its interval is wider, or absent",
				runs, c.AtStep))
		}
	case s != nil && s.Scaling && (len(c.Groups) < 2 || s.Param == "cpus"):
		for _, g := range s.Groups {
			if g.Gain == nil || math.IsNaN(g.GainPerDoubling) {
				continue
			}
			first, last := g.Steps[0].Value, g.Steps[len(g.Steps)-1].Value
			line := fmt.Sprintf("%s: each doubling of %s gives %.2fx throughput (%s=%s to %s", g.Label, s.Param, g.GainPerDoubling, s.Param, stepValue(first), stepValue(last))
			if v := g.Gain; v.Insufficient == "" {
				line += fmt.Sprintf(", 95%% CI %.2fx–%.2fx)", v.Lo, v.Hi)
			} else {
				line += "; " + v.Insufficient + ")"
			}
			a.Sentences = append(a.Sentences, line)
			for _, cv := range compare.VerdictCaveats(*g.Gain) {
				cv.Text = g.Label + "'s gain: " + cv.Text
				cs = append(cs, cv)
			}
		}
	case len(c.Groups) > 1 && c.each(func(r *result.Run) bool { return r.Replay != nil }):
		a.Sentences = c.replaySentences()
	default:
		if s != nil && s.EqualNote != "" {
			a.Notes = append(a.Notes, "no throughput at equal CPU: "+s.EqualNote+"; the answer is the verdict at the highest step both ran")
		}
		multi := c.each(func(r *result.Run) bool { return len(r.Parts) > 1 })
		for i, g := range c.Groups[1:] {
			for _, v := range c.Verdicts[i] {
				if !v.Primary {
					continue
				}
				at := ""
				if c.AtStep != "" {
					at = " at " + c.AtStep
				}
				if multi {
					a.Sentences = append(a.Sentences, c.hostsSentence(c.Groups[0], g, v))
				} else {
					a.Sentences = append(a.Sentences, v.Sentence(at))
				}
				cs = append(cs, labelled(compare.VerdictCaveats(v), len(c.Groups), v)...)
			}
		}
		if v := c.versions(); v != "" {
			a.Sentences = append(a.Sentences, v)
		}
		cs = append(cs, c.buildCaveats()...)
	}
	a.Assessment = compare.Assess(cs, runs)
	return a
}

// labelled names the groups a verdict's caveats are about, when the
// comparison has more than two groups or a sweep several answers.
func labelled(cs []compare.Caveat, groups int, v compare.Verdict) []compare.Caveat {
	if groups < 3 {
		return cs
	}
	for i := range cs {
		cs[i].Text = fmt.Sprintf("%s against %s: %s", v.LabelB, v.LabelA, cs[i].Text)
	}
	return cs
}

// ratioSentence is a figure of b against a with its 95% interval: the
// direction in words first ("b is 42.6% faster than a at equal CPU
// (59.0%)"), then the figure. An interval that is absent or too wide to
// inform is not printed; the caveat says so.
func ratioSentence(b, a string, ratio, lo, hi float64, at, how string) (string, []compare.Caveat) {
	fig := fmt.Sprintf("throughput %.1f%% of %s", 100*ratio, a)
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi):
		why := "one run a step gives no interval; --repeat 3 gives one"
		return fmt.Sprintf("%s made %.1f%% of %s's throughput%s; %s", b, 100*ratio, a, at, why),
			[]compare.Caveat{{Kind: compare.KindNoInterval, Text: why}}
	case lo <= 1 && hi >= 1 && hi/lo > 2:
		why := "the runs disagree too much for a useful interval (it would span more than a factor of 2); more runs a step narrow it"
		return fmt.Sprintf("%s made %.1f%% of %s's throughput%s; %s", b, 100*ratio, a, at, why),
			[]compare.Caveat{{Kind: compare.KindNoInterval, Text: why}}
	case lo <= 1 && hi >= 1:
		return fmt.Sprintf("no difference detectable between %s and %s%s: %s (95%% CI %.1f–%.1f%%, %s)", b, a, at, fig, 100*lo, 100*hi, how), nil
	}
	return fmt.Sprintf("%s is %s than %s%s: %s (95%% CI %.1f–%.1f%%, %s)", b, faster(ratio), a, at, fig, 100*lo, 100*hi, how), nil
}

// faster says a throughput ratio in words: "42.6% faster", "12.3% slower".
func faster(ratio float64) string {
	if ratio >= 1 {
		return fmt.Sprintf("%.1f%% faster", 100*(ratio-1))
	}
	return fmt.Sprintf("%.1f%% slower", 100*(1-ratio))
}

// hostsSentence is study 003's figure: the efficiency of the targets
// added (throughput ratio over targets ratio: 100% when each target
// added brings as much as each had), its interval from the throughput
// verdict's, and the per-target throughputs.
func (c *Comparison) hostsSentence(a, b compare.Group, v compare.Verdict) string {
	targets := func(g compare.Group) float64 {
		var n []float64
		for _, r := range g.Runs {
			n = append(n, float64(max(len(r.Parts), 1)))
		}
		return compare.Median(n)
	}
	hosts := func(g compare.Group) float64 {
		var n []float64
		for _, r := range g.Runs {
			n = append(n, float64(r.DatabaseHosts()))
		}
		return compare.Median(n)
	}
	ta, tb := targets(a), targets(b)
	if ta == tb {
		return v.Sentence("")
	}
	k := tb / ta
	line := fmt.Sprintf("efficiency of the targets added: %.0f%%", 100*v.Ratio/k)
	if v.Insufficient == "" {
		line += fmt.Sprintf(" (95%% CI %.0f–%.0f%%)", 100*v.Lo/k, 100*v.Hi/k)
	} else {
		line += " (" + v.Insufficient + ")"
	}
	line += fmt.Sprintf(": %s's %g targets on %g database host(s) made %.2fx the throughput of %s's %g on %g; per target %s against %s tps (100%% = each target added brings as much as each had)",
		b.Label, tb, hosts(b), v.Ratio, a.Label, ta, hosts(a), trim(v.MedianB/tb), trim(v.MedianA/ta))
	return line
}

// replaySentences are study 004's figure for each group: how long the
// replays took against their captures, their end states and the
// statements whose outcome changed.
func (c *Comparison) replaySentences() []string {
	var out []string
	for _, g := range c.Groups {
		var pace []float64
		var changed, alike, untold int64
		ends := map[string]bool{}
		var lag float64
		for _, r := range g.Runs {
			rp := r.Replay
			if rp == nil {
				continue
			}
			if rp.CaptureSeconds > 0 {
				pace = append(pace, rp.ReplaySeconds/rp.CaptureSeconds)
			}
			changed += rp.Divergent()
			alike += rp.RolledBackAlike()
			untold += rp.Untold()
			ends[endStateWords(rp)] = true
			if rp.Lag != nil {
				lag = max(lag, rp.Lag.MaxMs/1000)
			}
		}
		if len(pace) == 0 {
			continue
		}
		var es []string
		for e := range ends {
			es = append(es, e)
		}
		sort.Strings(es)
		line := fmt.Sprintf("%s replayed in %.2fx its capture's time; %s; %s", g.Label, compare.Median(pace),
			strings.Join(es, ", "), outcomeWords(changed, alike, untold))
		if lag > 1 {
			line += fmt.Sprintf("; fell behind its pace by up to %s", compare.Seconds(lag))
		}
		out = append(out, line)
	}
	return out
}

// outcomeWords counts the outcomes that changed, and says apart those
// that ended otherwise inside transactions that rolled back as captured
// (no change) and those the capture cannot tell.
func outcomeWords(changed, alike, untold int64) string {
	line := fmt.Sprintf("%d %s changed", changed, plural(changed, "outcome", "outcomes"))
	if alike > 0 {
		line += fmt.Sprintf(" (%d more %s ended otherwise inside transactions that rolled back as captured: no change)",
			alike, plural(alike, "statement", "statements"))
	}
	if untold > 0 {
		line += fmt.Sprintf("; %d %s the log cannot tell (it records no errors: %s may have failed in the application too)",
			untold, plural(untold, "error", "errors"), plural(untold, "it", "they"))
	}
	return line
}

// endStateWords is a replay's end state in a few words: without a
// verification, what the outcomes say of it.
func endStateWords(rp *result.Replay) string {
	es := rp.EndState
	switch {
	case es == nil && rp.EndStateSkipped != "":
		return "end state not verified (" + rp.EndStateSkipped + ")" + likelyDiffers(rp)
	case es == nil:
		return "end state not checked" + likelyDiffers(rp)
	}
	// Tables that differ for a cause the report names are not said to
	// match: they are counted apart.
	words := fmt.Sprintf("%d of %d tables match", es.Match+es.ClockOnly, es.Of)
	if es.Explained > 0 {
		words += fmt.Sprintf(", %d %s for a named cause", es.Explained, plural(int64(es.Explained), "differs", "differ"))
	}
	if rp.EndStateDiffers() {
		return "END STATE DIFFERS: " + words
	}
	return "end state " + words
}

// likelyDiffers is what a replay's outcomes say of an end state not
// compared: writing statements whose outcome changed leave it likely
// different (on a wire capture, whose rows affected were compared, in
// the tables they wrote), and writing statements that failed where the
// log cannot tell leave it possibly different. "" when neither.
func likelyDiffers(rp *result.Replay) string {
	out := ""
	if n := rp.WritesChanged; n > 0 {
		out = fmt.Sprintf(", LIKELY DIFFERENT: %d writing %s ended otherwise than captured", n, plural(n, "statement", "statements"))
		if rp.FromWire && len(rp.TablesChanged) > 0 {
			out += " (writing " + strings.Join(rp.TablesChanged, ", ") + ")"
		}
	}
	if n := rp.WritesUntold; n > 0 {
		if out == "" {
			out = ", may differ:"
		} else {
			out += ", and"
		}
		out += fmt.Sprintf(" %d writing %s failed where the log cannot tell whether %s failed in the application", n,
			plural(n, "statement", "statements"), plural(n, "it", "they"))
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// versions is study 005's second sentence: the servers' versions and
// builds, when they differ between the groups.
func (c *Comparison) versions() string {
	var ver, build []string
	for _, d := range c.Diff {
		switch d.Key {
		case "disclosure.database.version":
			ver = d.Values
		case "disclosure.database.build":
			build = d.Values
		}
	}
	if ver == nil && build == nil {
		return ""
	}
	var parts []string
	for i, g := range c.Groups {
		s := g.Label + ":"
		if ver != nil {
			s += " " + versionWords(ver[i])
		}
		if build != nil {
			if cc := compiler(build[i]); cc != "" {
				s += " built by " + cc
			}
		}
		parts = append(parts, s)
	}
	return "servers " + strings.Join(parts, " against ")
}

// buildCaveats: servers of the groups built by different compilers (a
// distribution's package against a portable archive) differ in more than
// their version.
func (c *Comparison) buildCaveats() []compare.Caveat {
	for _, d := range c.Diff {
		if d.Key != "disclosure.database.build" {
			continue
		}
		var ccs []string
		for _, v := range d.Values {
			ccs = append(ccs, compiler(v))
		}
		for _, cc := range ccs[1:] {
			if cc != ccs[0] {
				return []compare.Caveat{{Kind: compare.KindBuild, Text: fmt.Sprintf("the servers were built by different compilers (%s): the figure is not the version's alone; run both sides from one kind of build (ab --a-pg-bin DIR --b-pg-bin DIR: two archives' bin directories, unpacked under dbparity-data/pg-dist, or two packages')",
					strings.Join(ccs, " against "))}}
			}
		}
	}
	return nil
}

var compiledBy = regexp.MustCompile(`compiled by ([^,]+)`)
var compilerVersion = regexp.MustCompile(`^(\S+)\s.*?(\d+(\.\d+)+)\s*$`)

// compiler reads the compiler from a server's build string: "gcc 12.2.0"
// from "... compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit".
func compiler(build string) string {
	m := compiledBy.FindStringSubmatch(build)
	if m == nil {
		return ""
	}
	cc := strings.TrimSpace(m[1])
	if v := compilerVersion.FindStringSubmatch(cc); v != nil {
		return v[1] + " " + v[2]
	}
	return cc
}

// versionWords shortens a version string to its number and packager:
// "15.18 (Debian 15.18-0+deb12u1)" stays, a build string is cut at " on ".
func versionWords(v string) string {
	v, _, _ = strings.Cut(v, " on ")
	return strings.TrimPrefix(v, "PostgreSQL ")
}

// answerText writes the answer for a terminal.
func answerText(p *printer, a Answer) {
	p.f("\n  the answer\n")
	for _, s := range a.Sentences {
		p.f("    %s\n", s)
	}
	p.f("    grade: %s\n", a.Assessment.Label)
	for _, l := range a.Assessment.Lines {
		p.f("      %s\n", l)
	}
	for _, n := range a.Notes {
		p.f("    note: %s\n", n)
	}
}

// caveatRuns is the details section: the runs behind each caveat's line.
func caveatRuns(a compare.Assessment) *Table {
	if len(a.Runs) == 0 {
		return nil
	}
	t := &Table{Title: "the runs behind the caveats", Columns: []string{"caveat", "runs"}}
	for _, k := range a.Runs {
		t.Rows = append(t.Rows, []string{k.Title, strings.Join(k.Files, ", ")})
	}
	return t
}

// RunAssessment grades one run's figures by the rules a comparison's
// answer is graded by (its caveats: drift, a busy host, the driver, ...).
func RunAssessment(r *result.Run) compare.Assessment {
	return compare.Assess(compare.RunCaveats(r, ""), 1)
}

// replayAnswer is study 004's figure for one replay: its pace against
// the capture, its end state, the outcomes that changed, and how far it
// fell behind its pace.
func replayAnswer(rp *result.Replay) string {
	line := ""
	if rp.CaptureSeconds > 0 {
		line = fmt.Sprintf("replayed in %.2fx its capture's time (%s captured, %s replayed); ", rp.ReplaySeconds/rp.CaptureSeconds,
			compare.Seconds(rp.CaptureSeconds), compare.Seconds(rp.ReplaySeconds))
	}
	line += endStateWords(rp) + "; " + outcomeWords(rp.Divergent(), rp.RolledBackAlike(), rp.Untold())
	if l := rp.Lag; l != nil && l.MaxMs > 1000 {
		line += fmt.Sprintf("; BEHIND its pace: lag p50 %s, max %s", compare.Seconds(l.P50Ms/1000), compare.Seconds(l.MaxMs/1000))
	}
	return line
}
