package report

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbparity/dbparity/internal/atomicfile"
	"github.com/dbparity/dbparity/internal/compare"
	"github.com/dbparity/dbparity/internal/result"
)

// Index is a folder of result files as one page (show --html PAGE DIR):
// a row for every run, the sets of runs one dbparity ab or sweep wrote
// grouped, each set with its compare page and each run with its own page,
// those pages in a directory beside the index page.
type Index struct {
	Dir     string
	Runs    []IndexRun
	Sets    []IndexSet
	Skipped []Skipped
	// Side is the directory of the run and compare pages, beside the
	// page: PAGE without .html, then -dir.
	Side string
}

// IndexRun is one run's row.
type IndexRun struct {
	File     string // from Dir, with slashes
	Label    string
	Note     string // part i of N, merged, partial, failed, recovered
	Workload string
	Engine   string // engine and server version
	DBHost   string // the database host and the source it was seen by
	Start    time.Time
	TPS      float64 // NaN when the run has none
	Unit     string  // tps, or stmt/s for a replay
	P95Type  string  // the first transaction type
	P95Ms    float64 // its p95, NaN when its histogram is empty
	Grade    string
	Set      string // the set's name, "" when the run is in none
	Page     string // the run's page, relative to the index page
}

// IndexSet is the runs of one dbparity ab or sweep.
type IndexSet struct {
	Name    string // the files' prefix, from Dir
	Kind    string // "ab" or "sweep"
	Labels  []string
	Runs    int
	Answer  string // the comparison's first sentence
	Grade   string
	Page    string // its compare page, relative to the index page; "" when Refused
	Refused string // why compare refuses the set
	files   []string
}

// Skipped is a file under Dir that is not a result.
type Skipped struct {
	File   string
	Kind   string // journal, capture, snapshot, another dbparity file, damaged result, not dbparity's
	Reason string
}

// ErrNoResults is WriteIndex's error when the directory holds no result.
var ErrNoResults = errors.New("no dbparity result file")

// RefusedError is WriteIndex's refusal to write where a file that is not
// its own stands (show --html says so with exit 2).
type RefusedError struct{ Err error }

func (e RefusedError) Error() string { return e.Err.Error() }

// IndexOptions shape WriteIndex.
type IndexOptions struct {
	// Force replaces pages in the side directory that are not dbparity's.
	Force bool
	// Workers read and render runs at once (default: GOMAXPROCS, at most 4).
	Workers int
}

// IndexSideDir is the directory beside page that holds its run and
// compare pages: page without its .html, then -dir.
func IndexSideDir(page string) string {
	ext := filepath.Ext(page)
	if ext != ".html" && ext != ".htm" {
		ext = ""
	}
	return strings.TrimSuffix(page, ext) + "-dir"
}

// WriteIndex reads every result file under dir (*.json, and *.journal to
// say so; the page and its side directory left out), writes each run's
// page (RunHTML) and each ab or sweep set's compare page (CompareHTML) into
// the side directory, and the index page to page. With no result under
// dir it writes nothing and returns ErrNoResults (the Index says what was
// skipped).
func WriteIndex(page, dir string, o IndexOptions) (*Index, error) {
	ix := &Index{Dir: dir, Side: IndexSideDir(page)}
	var cands []string
	pageAbs, _ := filepath.Abs(page)
	sideAbs, _ := filepath.Abs(ix.Side)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(p)
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || abs == sideAbs) {
				return filepath.SkipDir
			}
			return nil
		}
		if abs == pageAbs || !d.Type().IsRegular() {
			return nil
		}
		if strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".journal") {
			cands = append(cands, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	side := &sideWriter{dir: ix.Side, force: o.Force, used: map[string]bool{}}
	rows := make([]*IndexRun, len(cands))
	skips := make([]*Skipped, len(cands))
	keys := make([]setKey, len(cands))
	names := make([]string, len(cands))
	for i, p := range cands {
		rel, _ := filepath.Rel(dir, p)
		names[i] = side.name("run-", strings.TrimSuffix(filepath.ToSlash(rel), ".json"))
	}
	workers := o.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	var (
		wg      sync.WaitGroup
		next    = make(chan int)
		errOnce sync.Once
		werr    error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := cands[i]
				rel, _ := filepath.Rel(dir, p)
				rel = filepath.ToSlash(rel)
				r, skip := readCandidate(p, rel)
				if skip != nil {
					skips[i] = skip
					continue
				}
				var b bytes.Buffer
				if err := RunHTML(&b, r); err != nil {
					skips[i] = &Skipped{File: rel, Kind: "damaged result", Reason: err.Error()}
					continue
				}
				if err := side.write(names[i], b.Bytes()); err != nil {
					errOnce.Do(func() { werr = err })
					continue
				}
				row := indexRow(r, rel)
				row.Page = side.href(names[i])
				rows[i] = &row
				keys[i] = setOf(r, p, dir)
			}
		}()
	}
	for i := range cands {
		next <- i
	}
	close(next)
	wg.Wait()
	if werr != nil {
		return ix, werr
	}
	for i := range cands {
		if skips[i] != nil {
			ix.Skipped = append(ix.Skipped, *skips[i])
		}
	}
	// The sets: two runs or more whose names share a prefix as ab's and
	// sweep's files do.
	members := map[setKey][]int{}
	for i, row := range rows {
		if row != nil && keys[i].name != "" {
			members[keys[i]] = append(members[keys[i]], i)
		}
	}
	var sets []setKey
	for k, is := range members {
		if len(is) >= 2 {
			sets = append(sets, k)
			for _, i := range is {
				rows[i].Set = k.name
			}
		}
	}
	slices.SortFunc(sets, func(a, b setKey) int { return strings.Compare(a.name, b.name) })
	for _, k := range sets {
		s := IndexSet{Name: k.name, Kind: k.kind}
		for _, i := range members[k] {
			s.files = append(s.files, cands[i])
			if !slices.Contains(s.Labels, rows[i].Label) {
				s.Labels = append(s.Labels, rows[i].Label)
			}
		}
		s.Runs = len(s.files)
		b, err := setPage(&s, dir)
		if err != nil {
			s.Refused = err.Error()
		} else {
			name := side.name("set-", k.name)
			if err := side.write(name, b); err != nil {
				return ix, err
			}
			s.Page = side.href(name)
		}
		ix.Sets = append(ix.Sets, s)
	}
	// Runs in sets first, a set's runs together, then the others by file.
	for _, row := range rows {
		if row != nil {
			ix.Runs = append(ix.Runs, *row)
		}
	}
	slices.SortStableFunc(ix.Runs, func(a, b IndexRun) int {
		if (a.Set == "") != (b.Set == "") {
			if a.Set == "" {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.Set, b.Set); c != 0 {
			return c
		}
		return strings.Compare(a.File, b.File)
	})
	if len(ix.Runs) == 0 {
		return ix, ErrNoResults
	}
	side.clean()
	var b bytes.Buffer
	if err := IndexHTML(&b, ix); err != nil {
		return ix, err
	}
	if err := atomicfile.WriteBytes(page, b.Bytes()); err != nil {
		return ix, fmt.Errorf("write %s: %w", page, err)
	}
	return ix, nil
}

// dbparityFile matches the head of dbparity's own JSON files, as show's
// --html check does: results and journals ("schema"), captures and
// snapshots ("format").
var dbparityFile = regexp.MustCompile(`^\s*\{\s*"(?:schema|format)"\s*:\s*"(dbparity\.[a-z]+)/`)

// readCandidate reads p as a result, or says what it is instead.
func readCandidate(p, rel string) (*result.Run, *Skipped) {
	f, err := os.Open(p)
	if err != nil {
		return nil, &Skipped{File: rel, Kind: "unreadable", Reason: err.Error()}
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	if n >= 2 && head[0] == 0x1f && head[1] == 0x8b { // a capture is gzipped JSON
		if _, err := f.Seek(0, io.SeekStart); err == nil {
			if zr, err := gzip.NewReader(f); err == nil {
				n, _ = io.ReadFull(zr, head)
			}
		}
	}
	kind := ""
	if m := dbparityFile.FindSubmatch(head[:n]); m != nil {
		kind = string(m[1])
	}
	switch kind {
	case "dbparity.run":
		r, err := result.Read(p)
		if err != nil {
			return nil, &Skipped{File: rel, Kind: "damaged result", Reason: err.Error()}
		}
		return r, nil
	case "dbparity.journal":
		return nil, &Skipped{File: rel, Kind: "journal", Reason: "the journal of a run that died: dbparity recover turns it into a result"}
	case "dbparity.capture":
		return nil, &Skipped{File: rel, Kind: "capture", Reason: "a capture (dbparity replay plays it)"}
	case "dbparity.snapshot":
		return nil, &Skipped{File: rel, Kind: "snapshot", Reason: "an end-state snapshot"}
	case "":
		return nil, &Skipped{File: rel, Kind: "not dbparity's", Reason: "not a dbparity file"}
	}
	return nil, &Skipped{File: rel, Kind: "another dbparity file", Reason: kind + ", not a result"}
}

// SkipLine says in one line how many files were skipped and why, or ""
// when none was.
func (ix *Index) SkipLine() string {
	if len(ix.Skipped) == 0 {
		return ""
	}
	var kinds []string
	by := map[string][]Skipped{}
	for _, s := range ix.Skipped {
		if by[s.Kind] == nil {
			kinds = append(kinds, s.Kind)
		}
		by[s.Kind] = append(by[s.Kind], s)
	}
	var parts []string
	for _, k := range kinds {
		ss := by[k]
		what := fmt.Sprintf("%d %s (%s", len(ss), k, ss[0].File)
		if len(ss) > 1 {
			what += fmt.Sprintf(" and %d more", len(ss)-1)
		}
		what += ": " + ss[0].Reason + ")"
		parts = append(parts, what)
	}
	return fmt.Sprintf("skipped %d %s: %s", len(ix.Skipped), plural(int64(len(ix.Skipped)), "file", "files"), strings.Join(parts, "; "))
}

// setKey names the set a run's file belongs to: the prefix ab or sweep
// gave its files (PREFIX-LABEL-ROUND.json, PREFIX-LABEL-PARAM=VALUE-REP.json),
// from the directory read.
type setKey struct{ name, kind string }

// fileLabel is a label as ab and sweep put it in a file name.
func fileLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

var repSuffix = regexp.MustCompile(`-[0-9]+$`)

// setOf is the set of the run r read from p, or none when r records no
// round or step or its file is not named as ab and sweep name theirs.
func setOf(r *result.Run, p, dir string) setKey {
	base := strings.TrimSuffix(filepath.Base(p), ".json")
	var prefix, kind string
	switch {
	case r.Step != nil:
		loc := repSuffix.FindStringIndex(base)
		if loc == nil {
			return setKey{}
		}
		rest := base[:loc[0]]
		tail := "-" + fileLabel(r.Label) + "-" + r.Step.Param + "=" + strconv.FormatFloat(r.Step.Value, 'f', -1, 64)
		if !strings.HasSuffix(rest, tail) {
			return setKey{}
		}
		prefix, kind = strings.TrimSuffix(rest, tail), "sweep"
	case r.Round > 0:
		tail := "-" + fileLabel(r.Label) + "-" + strconv.Itoa(r.Round)
		if !strings.HasSuffix(base, tail) {
			return setKey{}
		}
		prefix, kind = strings.TrimSuffix(base, tail), "ab"
	default:
		return setKey{}
	}
	rel, err := filepath.Rel(dir, filepath.Join(filepath.Dir(p), prefix))
	if err != nil || prefix == "" {
		return setKey{}
	}
	return setKey{name: filepath.ToSlash(rel), kind: kind}
}

// setPage reads a set's runs again and writes its comparison as compare
// would (grouped by label, the baseline ab's or sweep's side A); the
// reason compare refuses it, else.
func setPage(s *IndexSet, dir string) ([]byte, error) {
	var runs []*result.Run
	var files []string
	for _, p := range s.files {
		r, err := result.Read(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, p)
		runs, files = append(runs, r), append(files, filepath.ToSlash(rel))
	}
	baseline := ""
	if a := sideA(runs[0].Command); slices.Contains(s.Labels, a) {
		baseline = a
	}
	gs, err := compare.GroupRuns(runs, files, "label", baseline)
	if err != nil {
		return nil, err
	}
	if compare.SweepParam(gs) == "" {
		if err := compare.TwoGroups(gs, "label"); err != nil {
			return nil, err
		}
	}
	if err := compare.Comparable(gs, nil); err != nil {
		return nil, err
	}
	c, err := NewComparisonWith(gs, CompareOptions{})
	if err != nil {
		return nil, err
	}
	a := c.Answer()
	if len(a.Sentences) > 0 {
		s.Answer = a.Sentences[0]
	}
	s.Grade = a.Assessment.Label
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sideA is the label of side A in an ab or sweep command line: its
// --label-a, else "a".
func sideA(command []string) string {
	if len(command) < 2 || command[1] != "ab" && command[1] != "sweep" {
		return ""
	}
	for i, a := range command {
		name, v, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "label-a" {
			continue
		}
		if eq {
			return v
		}
		if i+1 < len(command) {
			return command[i+1]
		}
	}
	return "a"
}

// indexRow is the row of run r, read from rel.
func indexRow(r *result.Run, rel string) IndexRun {
	s := r.Summarize()
	row := IndexRun{File: rel, Label: r.Label, Workload: r.Workload.Name, Start: r.Start, TPS: s.TPS, Unit: "tps",
		P95Ms: math.NaN(), Grade: RunAssessment(r).Label}
	if row.Start.IsZero() {
		row.Start = r.MeasureStart
	}
	if r.Replay != nil {
		row.Unit = "stmt/s"
	}
	if !(s.DurationS > 0) {
		row.TPS = math.NaN()
	}
	if len(r.Transactions) > 0 {
		t := r.Transactions[0]
		row.P95Type = t.Name
		if t.Latency.Count > 0 {
			row.P95Ms = t.Latency.P95Ms
		}
	}
	var notes []string
	switch {
	case r.Part != nil:
		notes = append(notes, fmt.Sprintf("part %d of %d", r.Part.Index, r.Part.Of))
	case r.Merged != nil:
		notes = append(notes, fmt.Sprintf("merged from %d parts", len(r.Merged.Parts)))
	}
	if r.Step != nil {
		notes = append(notes, r.Step.Param+"="+strconv.FormatFloat(r.Step.Value, 'f', -1, 64))
	}
	if r.Round > 0 {
		notes = append(notes, fmt.Sprintf("round %d", r.Round))
	}
	switch {
	case r.Failed:
		notes = append(notes, "FAILED")
	case r.Recovered:
		notes = append(notes, "recovered")
	case r.Partial:
		notes = append(notes, "partial")
	}
	row.Note = strings.Join(notes, ", ")
	engine, version := r.Target.Dialect, r.Target.ServerVersion
	if d := r.Disclosure; d != nil && d.Database != nil {
		if d.Database.Product != "" {
			engine = d.Database.Product
		}
		if d.Database.Version != "" {
			version = d.Database.Version
		}
	}
	row.Engine = strings.TrimSpace(engine + " " + version)
	row.DBHost = dbHost(r)
	return row
}

// dbHost is the database host's name and the source that saw it: the
// disclosure's, else this host's for a local database, else the target
// URL's host.
func dbHost(r *result.Run) string {
	src := compare.HostSource(r)
	name := ""
	if d := r.Disclosure; d != nil {
		name = d.Host.Hostname
	}
	if name == "" && src == "local" {
		name = r.Host.Hostname
	}
	if name == "" {
		if u, err := url.Parse(r.Target.URL); err == nil && u.Hostname() != "" {
			name, src = u.Hostname(), "target URL"
		}
	}
	if name == "" {
		return "n/a"
	}
	return name + " (" + src + ")"
}

// sideWriter writes the pages beside the index page.
type sideWriter struct {
	dir     string
	force   bool
	mu      sync.Mutex
	used    map[string]bool // names handed out
	written map[string]bool
	made    bool
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=+~-]+`)

// name is a file name in the side directory for what (a file's path from
// the directory read, a set's name), unique among those handed out.
func (s *sideWriter) name(kind, what string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := kind + unsafeName.ReplaceAllString(strings.ReplaceAll(what, "/", "~"), "_")
	name := base + ".html"
	for k := 2; s.used[name]; k++ {
		name = fmt.Sprintf("%s-%d.html", base, k)
	}
	s.used[name] = true
	return name
}

// href is the link from page to name in the side directory.
func (s *sideWriter) href(name string) string {
	return url.PathEscape(filepath.Base(s.dir)) + "/" + url.PathEscape(name)
}

// write writes name in the side directory, which it makes first: an
// existing file that is not a dbparity page is replaced only with force.
func (s *sideWriter) write(name string, data []byte) error {
	s.mu.Lock()
	if !s.made {
		if st, err := os.Stat(s.dir); err == nil && !st.IsDir() {
			s.mu.Unlock()
			return RefusedError{fmt.Errorf("%s is not a directory: the index page's run and compare pages go there (choose another page name)", s.dir)}
		}
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			s.mu.Unlock()
			return err
		}
		s.made = true
	}
	if s.written == nil {
		s.written = map[string]bool{}
	}
	s.written[name] = true
	s.mu.Unlock()
	p := filepath.Join(s.dir, name)
	if !s.force && !ourPage(p) {
		return RefusedError{fmt.Errorf("%s exists and is not a dbparity HTML page: move it, or add --force to replace it", p)}
	}
	// The pages are written again with the index: a plain write, not
	// synced one by one (hundreds of fsyncs on the disk under test).
	return os.WriteFile(p, data, 0o644)
}

// ourPage tells whether p is absent or a page dbparity wrote.
func ourPage(p string) bool {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte(HTMLGenerator))
}

// clean removes the run and set pages of an earlier index that this one
// did not write again.
func (s *sideWriter) clean() {
	es, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range es {
		n := e.Name()
		if e.Type().IsRegular() && !s.written[n] && strings.HasSuffix(n, ".html") &&
			(strings.HasPrefix(n, "run-") || strings.HasPrefix(n, "set-")) && ourPage(filepath.Join(s.dir, n)) {
			os.Remove(filepath.Join(s.dir, n))
		}
	}
}

// indexData is what the index page shows.
type indexData struct {
	Title, Dir, Summary, Skipped string
	Sets                         []IndexSet
	Runs                         []indexRowData
}

type indexRowData struct {
	IndexRun
	Date, DateKey, TPSText, TPSKey, P95Text, P95Key string
	SetPage                                         string // the set's compare page, or its row's anchor
}

// IndexHTML writes the index page: the sets, then every run in a table
// that sorts by a click on a column's heading and filters by the words
// typed in a box. One file, its style and script inline, no request
// leaves it; with scripts off every row is shown.
func IndexHTML(w io.Writer, ix *Index) error {
	d := indexData{Title: "dbparity results: " + ix.Dir, Dir: ix.Dir, Sets: ix.Sets, Skipped: ix.SkipLine()}
	d.Summary = fmt.Sprintf("%d %s", len(ix.Runs), plural(int64(len(ix.Runs)), "run", "runs"))
	if len(ix.Sets) > 0 {
		d.Summary += fmt.Sprintf(", %d of them in %d %s of dbparity ab or sweep", inSets(ix), len(ix.Sets), plural(int64(len(ix.Sets)), "set", "sets"))
	}
	d.Summary += ". Each run's label opens its page (dbparity show --html); each set's name its comparison (dbparity compare --html)."
	setPages := map[string]string{}
	for _, s := range ix.Sets {
		setPages[s.Name] = s.Page
		if s.Page == "" {
			setPages[s.Name] = "#" + setAnchor(s.Name)
		}
	}
	for _, r := range ix.Runs {
		row := indexRowData{IndexRun: r, TPSText: "n/a", P95Text: "n/a", SetPage: setPages[r.Set]}
		if row.Label == "" {
			row.Label = "(no label)"
		}
		if !r.Start.IsZero() {
			row.Date, row.DateKey = r.Start.UTC().Format("2006-01-02 15:04"), r.Start.UTC().Format(time.RFC3339)
		}
		if !math.IsNaN(r.TPS) {
			row.TPSText, row.TPSKey = fmt.Sprintf("%.1f %s", r.TPS, r.Unit), strconv.FormatFloat(r.TPS, 'g', -1, 64)
		}
		if !math.IsNaN(r.P95Ms) {
			row.P95Text, row.P95Key = fmt.Sprintf("%.2f", r.P95Ms), strconv.FormatFloat(r.P95Ms, 'g', -1, 64)
		}
		d.Runs = append(d.Runs, row)
	}
	return indexPage.Execute(w, d)
}

func inSets(ix *Index) int {
	n := 0
	for _, r := range ix.Runs {
		if r.Set != "" {
			n++
		}
	}
	return n
}

// setAnchor is the id of a set's row in the sets' table.
func setAnchor(name string) string { return "set-" + unsafeName.ReplaceAllString(name, "_") }

var indexPage = template.Must(template.New("index").Funcs(template.FuncMap{"gradeClass": gradeClass, "setAnchor": setAnchor}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">` + HTMLGenerator + `<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title>
<style>
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:10px 24px 24px;color:#222;max-width:1600px}
h1{font-size:17px;margin:0 0 .2em}h2{font-size:16px;margin-top:1.4em}
h1,h2,p{overflow-wrap:anywhere}
.note{color:#666;margin:.2em 0}
.tbl{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{white-space:nowrap;vertical-align:bottom;background:#fafafa}td.num,th.num{text-align:right}td.num{white-space:nowrap}
td.file{overflow-wrap:anywhere;min-width:12em;color:#555}td.wide{min-width:22em}
.sub{display:block;color:#666;font-size:12px}
.grade{display:inline-block;padding:0 6px;border-radius:4px;font-weight:bold;font-size:12px;letter-spacing:.03em;background:#eee;color:#333;white-space:nowrap}
.grade.trustworthy{background:#d7f0dc;color:#14532d}.grade.read-with-care{background:#fdefc3;color:#713f12}.grade.not-a-finding{background:#f9d9d9;color:#7f1d1d}
th.sortable{cursor:pointer}th.sortable:after{content:" \2195";color:#aaa}
th[aria-sort=ascending]:after{content:" \2191";color:#222}th[aria-sort=descending]:after{content:" \2193";color:#222}
#find{margin:.6em 0}#filter{font:inherit;padding:3px 6px;width:28em;max-width:100%}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="note">{{.Summary}}</p>
{{with .Skipped}}<p class="note" id="skipped">{{.}}</p>{{end}}
{{if .Sets}}<h2>sets of dbparity ab and sweep</h2>
<div class="tbl"><table id="sets"><thead><tr><th>set</th><th>kind</th><th>labels</th><th class="num">runs</th><th>the answer</th><th>grade</th></tr></thead><tbody>
{{range .Sets}}<tr id="{{setAnchor .Name}}"><td>{{if .Page}}<a href="{{.Page}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{.Kind}}</td><td>{{range $i, $l := .Labels}}{{if $i}}, {{end}}{{$l}}{{end}}</td><td class="num">{{.Runs}}</td><td class="wide">{{if .Page}}{{.Answer}}{{else}}no compare page: {{.Refused}}{{end}}</td><td>{{with .Grade}}<span class="grade {{gradeClass .}}">{{.}}</span>{{end}}</td></tr>
{{end}}</tbody></table></div>
{{end}}<h2>runs</h2>
<p id="find" hidden><input id="filter" type="search" placeholder="filter: words a row holds (label, host, grade, set, file...)" aria-label="filter the runs"> <span id="shown" class="note"></span></p>
<div class="tbl"><table id="runs"><thead><tr><th>label</th><th>workload</th><th>engine</th><th>database host</th><th>date (UTC)</th><th class="num" data-num>throughput</th><th class="num" data-num>p95 ms</th><th>grade</th><th>set</th><th>file</th></tr></thead><tbody>
{{range .Runs}}{{$r := .}}<tr><td><a href="{{.Page}}">{{.Label}}</a>{{with .Note}} <span class="sub">{{.}}</span>{{end}}</td><td>{{.Workload}}</td><td>{{.Engine}}</td><td>{{.DBHost}}</td><td data-v="{{.DateKey}}">{{.Date}}</td><td class="num" data-v="{{.TPSKey}}">{{.TPSText}}</td><td class="num" data-v="{{.P95Key}}">{{.P95Text}}{{with .P95Type}}<span class="sub">{{.}}</span>{{end}}</td><td>{{with .Grade}}<span class="grade {{gradeClass .}}">{{.}}</span>{{end}}</td><td>{{with .Set}}<a href="{{$r.SetPage}}">{{.}}</a>{{end}}</td><td class="file">{{.File}}</td></tr>
{{end}}</tbody></table></div>
<p class="note">Written by dbparity show --html from the result files under {{.Dir}}. This file fetches nothing; its script only sorts and filters the table.</p>
<script>
(function () {
  var t = document.getElementById("runs"), body = t.tBodies[0], heads = t.tHead.rows[0].cells;
  var find = document.getElementById("find"), filter = document.getElementById("filter"), shown = document.getElementById("shown");
  function key(td) { var v = td.getAttribute("data-v"); return v === null ? td.textContent.trim().toLowerCase() : v; }
  function sort(i) {
    var h = heads[i], asc = h.getAttribute("aria-sort") !== "ascending", num = h.hasAttribute("data-num");
    for (var k = 0; k < heads.length; k++) heads[k].removeAttribute("aria-sort");
    h.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[i]), y = key(b.cells[i]);
      if (x === "" || y === "") return (x === "") - (y === ""); // n/a last either way
      var d = num ? x - y : x.localeCompare(y);
      return asc ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(heads, function (h, i) {
    h.className += " sortable";
    h.tabIndex = 0;
    h.title = "sort by " + h.textContent;
    h.addEventListener("click", function () { sort(i); });
    h.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(i); } });
  });
  function apply() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean), n = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var text = r.textContent.toLowerCase(), ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      r.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = words.length ? n + " of " + body.rows.length + " runs" : body.rows.length + " runs";
  }
  filter.addEventListener("input", apply);
  find.hidden = false;
  apply();
})();
</script>
</body></html>
`))
