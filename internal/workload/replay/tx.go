package replay

import (
	"strings"
	"unicode"
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
// (autocommit). A failed statement aborts its block; ROLLBACK TO a
// savepoint recovers it.
type txState struct {
	inBlock, failed bool
}

// step feeds one statement: what it is, whether it failed, and the
// server's command tag ("" when unknown: the capture); it tells whether a
// transaction committed with it, and whether it was a COMMIT that the
// server answered with a rollback (its block had failed).
func (t *txState) step(kind int, failed bool, tag string) (committed, rolledBack bool) {
	if failed {
		if t.inBlock {
			t.failed = true
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
