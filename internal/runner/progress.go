package runner

import (
	"fmt"
	"io"
	"time"
)

// progress draws a status line: in place on a terminal, and otherwise a
// plain line every interval (default ten seconds), so that logs of long
// runs (CI, nohup, a pod's log) stay readable.
type progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	next     time.Time // when the next line is due (off a terminal)
}

// DefaultProgressInterval is how often a progress line is written when
// stderr is not a terminal (--progress-interval).
const DefaultProgressInterval = 10 * time.Second

func (p *progress) show(line string) { p.showAt(time.Now(), line) }

func (p *progress) showAt(now time.Time, line string) {
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	every := p.interval
	if every <= 0 {
		every = DefaultProgressInterval
	}
	// Status comes once a tick (a second), each a little early or late on
	// a busy host: lines keep to a schedule of their own, a tick within
	// half a second of its due time (or half the interval) taking it, so
	// that one late line does not make the next one early enough to skip
	// (3 lines in 5 s at one a second, beside a second test suite).
	slack := min(every/2, 500*time.Millisecond)
	if !p.next.IsZero() && now.Before(p.next.Add(-slack)) {
		return
	}
	fmt.Fprintln(p.w, line)
	if p.next.IsZero() || now.Sub(p.next) > slack {
		p.next = now.Add(every) // the first line, or one so late it starts afresh
	} else {
		p.next = p.next.Add(every)
	}
}

// clear ends the status line before other output.
func (p *progress) clear() {
	if p.w != nil && p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func bar(done, total int64, width int) string {
	if total <= 0 {
		total = 1
	}
	n := int(min(done, total) * int64(width) / total)
	b := make([]byte, width)
	for i := range b {
		if i < n {
			b[i] = '#'
		} else {
			b[i] = '.'
		}
	}
	return string(b)
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func bytesHuman(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
