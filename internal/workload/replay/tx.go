package replay

import (
	"strings"
	"unicode"

	"github.com/dbparity/dbparity/internal/capture"
)

// Kinds of transaction control statements.
const (
	txOther = iota
	txBegin
	txCommit
	txRollback
	txSavepoint
	txRollbackTo
	txRelease
	txPrepare // PREPARE TRANSACTION: ends the block, commits nothing yet
)

// txKindOf reads what a statement does to the transaction block.
func txKindOf(text string) int {
	s := strings.TrimLeftFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
	f := strings.FieldsFunc(strings.ToUpper(firstN(s, 80)), func(r rune) bool { return unicode.IsSpace(r) || r == ';' })
	if len(f) == 0 {
		return txOther
	}
	second := ""
	if len(f) > 1 {
		second = f[1]
	}
	switch f[0] {
	case "BEGIN":
		return txBegin
	case "START":
		if second == "TRANSACTION" {
			return txBegin
		}
	case "COMMIT", "END":
		if second == "PREPARED" {
			return txOther // commits a prepared transaction, outside any block
		}
		return txCommit
	case "ABORT":
		return txRollback
	case "ROLLBACK":
		switch {
		case second == "PREPARED":
			return txOther
		case second == "TO" || (len(f) > 2 && (second == "WORK" || second == "TRANSACTION") && f[2] == "TO"):
			return txRollbackTo
		}
		return txRollback
	case "SAVEPOINT":
		return txSavepoint
	case "RELEASE":
		return txRelease
	case "PREPARE":
		if second == "TRANSACTION" {
			return txPrepare
		}
	}
	return txOther
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// txState follows one session's transaction blocks, in the capture or in
// the replay, and counts transactions as the server does: a block that
// committed, and every statement that succeeded outside a block
// (autocommit). On PostgreSQL a failed statement aborts its block, and
// ROLLBACK TO a savepoint recovers it; on MySQL and MariaDB (mysql set)
// an error undoes its statement alone, but a deadlock (40001) rolls the
// whole transaction back and ends the block.
type txState struct {
	inBlock, failed bool
	mysql           bool
}

// step feeds one statement: what it is, its SQLSTATE when it failed (""
// when it did not), and the server's command tag ("" when unknown: the
// capture); it tells whether a transaction committed with it, and
// whether it ended its block with a rollback the client did not ask for
// (a COMMIT that the server answered with a rollback, its block having
// failed; a MySQL deadlock).
func (t *txState) step(kind int, state string, tag string) (committed, rolledBack bool) {
	if state != "" {
		switch {
		case !t.inBlock:
		case !t.mysql:
			t.failed = true
		case state == "40001":
			t.inBlock, t.failed = false, false
			return false, true
		}
		return false, false
	}
	switch kind {
	case txBegin:
		t.inBlock, t.failed = true, false
	case txCommit:
		if !t.inBlock {
			return false, false // a COMMIT outside a block: a warning, nothing more
		}
		committed = !t.failed && tag != "ROLLBACK"
		t.inBlock, t.failed = false, false
		return committed, !committed
	case txRollback, txPrepare:
		t.inBlock, t.failed = false, false
	case txRollbackTo:
		if t.inBlock {
			t.failed = false
		}
	case txSavepoint, txRelease:
	default:
		return !t.inBlock, false
	}
	return false, false
}

// errState is a captured statement's SQLSTATE for txState.step: "" when
// it succeeded, "?" when it failed with none known.
func errState(e *capture.Error) string {
	switch {
	case e == nil:
		return ""
	case e.SQLState == "":
		return "?"
	}
	return e.SQLState
}
