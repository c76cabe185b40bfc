package main

import (
	"fmt"
	"sync/atomic"
)

// stopNote is what the first interrupt (Ctrl-C, SIGTERM) says the command
// keeps of its work: its own, set as it starts (stopNoteOf) and made
// precise once it knows more (a capture, which kind it is).
var stopNote atomic.Pointer[string]

// setStopNote sets what an interrupt says from now on.
func setStopNote(s string) { stopNote.Store(&s) }

// stopMessage is the first interrupt's line.
func stopMessage() string {
	note := stopNoteOf("")
	if p := stopNote.Load(); p != nil {
		note = *p
	}
	return "dbparity: stopping: " + note
}

// stopNoteOf is what an interrupt of the command named keeps: a run's
// measurements (run, ab, sweep, replay write what was measured); a load
// nothing (internal/workload writes its record in dbparity_meta last, and
// a new load drops the tables first).
func stopNoteOf(name string) string {
	switch name {
	case "load":
		return "the load stops where it is: the half-finished load is not recorded as loaded (run and check refuse its tables), and the next load starts over"
	case "capture":
		return "the capture ends"
	}
	return "the current transactions get 2 s to finish, then what was measured is written"
}

// captureStopNote is a capture's: one from logs writes nothing; one from
// the wire writes what it recorded until the interrupt.
func captureStopNote(fromWire bool, out string) string {
	if !fromWire {
		return "reading the logs stops: no capture is written"
	}
	return fmt.Sprintf("the capture ends: the statements recorded until now are written to %s (nothing when there is none)", out)
}
