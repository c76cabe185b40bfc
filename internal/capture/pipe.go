package capture

// Reading a log and rebuilding its sessions run side by side: one
// goroutine reads the files (lines, csvlog records, prefixes, timestamps)
// and hands what it read to the builder, which runs in another, in
// batches through a pipe of a few batches, so that on two cores capture
// takes about the time of the slower of the two rather than their sum,
// and the memory in flight stays bounded.

// sink takes what a log reader read, in log order: the messages, and the
// lines it skipped.
type sink interface {
	add(e *entry)
	skip(effect SkipEffect, reason, where string)
}

// event is a message or a skip on its way to the builder.
type event struct {
	e      entry
	reason string // a skip when not empty
	effect SkipEffect
	where  string
}

const (
	pipeBatch   = 256 // events a batch holds
	pipeBatches = 8   // batches in the pipe's whole circuit
)

// pipe is a sink that sends to a builder in another goroutine.
type pipe struct {
	batch []event
	full  chan []event
	free  chan []event
}

func newPipe() *pipe {
	p := &pipe{full: make(chan []event, pipeBatches), free: make(chan []event, pipeBatches)}
	for range pipeBatches - 1 {
		p.free <- make([]event, 0, pipeBatch)
	}
	p.batch = make([]event, 0, pipeBatch)
	return p
}

func (p *pipe) add(e *entry) {
	p.batch = append(p.batch, event{e: *e})
	if len(p.batch) == pipeBatch {
		p.send()
	}
}

func (p *pipe) skip(effect SkipEffect, reason, where string) {
	p.batch = append(p.batch, event{reason: reason, effect: effect, where: where})
	if len(p.batch) == pipeBatch {
		p.send()
	}
}

func (p *pipe) send() {
	p.full <- p.batch
	p.batch = <-p.free
}

// close sends what is left; the builder's side ends after it.
func (p *pipe) close() {
	if len(p.batch) > 0 {
		p.full <- p.batch
	}
	close(p.full)
}

// drain hands every event to the builder until the reader closes the
// pipe.
func (p *pipe) drain(b *builder) {
	for batch := range p.full {
		for i := range batch {
			ev := &batch[i]
			if ev.reason != "" {
				b.skip(ev.effect, ev.reason, ev.where)
			} else {
				b.add(&ev.e)
			}
		}
		clear(batch) // what was read goes as soon as it is used
		select {
		case p.free <- batch[:0]:
		default:
		}
	}
}
