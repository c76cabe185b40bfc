package runner

import (
	"fmt"
	"io"
	"time"
)

// progress draws a status line: in place on a terminal, and otherwise one
// line every ten seconds, so that logs of long runs stay readable.
type progress struct {
	w    io.Writer
	tty  bool
	last time.Time
}

func (p *progress) show(line string) {
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 10*time.Second {
		p.last = now
		fmt.Fprintln(p.w, line)
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
