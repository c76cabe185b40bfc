package replay

import (
	"context"
	"regexp"

	"github.com/dbparity/dbparity/internal/capture"
)

// PostgreSQL type OIDs a parameter is bound with when the server cannot
// infer it.
const (
	oidBool    = 16
	oidInt8    = 20
	oidText    = 25
	oidUnknown = 705
	oidNumeric = 1700
)

// Typing says what Type did.
type Typing struct {
	// Texts and Params were typed by inference; Executions counts the
	// statements that run with those types.
	Texts, Params int
	Executions    int64
	// Failed are texts the server could not prepare with or without the
	// inferred types: they run untyped, as captured.
	Failed int
}

// Describe prepares text on a connection as user to database with the
// parameter types given (0: inferred) and returns the types the server
// chose.
type Describe func(ctx context.Context, user, database, text string, types []uint32) ([]uint32, error)

// Literal classes of a parameter's captured values.
const (
	litNone = iota // no value seen yet (or only NULLs)
	litInt
	litNumeric
	litBool  // true or false
	litTF    // t or f as well
	litOther // anything else
)

var (
	intLit     = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	numericLit = regexp.MustCompile(`^-?(0|[1-9][0-9]*)\.[0-9]+$`)
)

func classOf(v string) int {
	switch {
	case intLit.MatchString(v) && len(v) <= 19:
		return litInt
	case numericLit.MatchString(v):
		return litNumeric
	case v == "true" || v == "false":
		return litBool
	case v == "t" || v == "f":
		return litTF
	}
	return litOther
}

// merge combines the class so far with one more value's.
func merge(a, b int) int {
	switch {
	case a == litNone:
		return b
	case a == b:
		return a
	case (a == litInt && b == litNumeric) || (a == litNumeric && b == litInt):
		return litNumeric
	case (a == litBool && b == litTF) || (a == litTF && b == litBool):
		return litTF
	}
	return litOther
}

// declared tells types that name at least one type (not all inferred).
func declared(types []uint32) bool {
	for _, t := range types {
		if t != 0 {
			return true
		}
	}
	return false
}

// Type decides the parameter types of the extended-protocol statements.
// The log holds parameters as text only, and libpq-style clients send them
// untyped, so the server infers the types as when they were captured. But
// drivers that send typed parameters (psycopg 3, pgjdbc) leave statements
// whose parameters the server can type only as text or not at all: "$1 *
// $2" fails (42725), "$1 > $2" compares text. Where the server infers text
// or unknown for a parameter, or cannot prepare the statement, and every
// captured value of that parameter is an integer, a numeric or a boolean
// literal (written as the server would write it back, so that a text
// column receiving it is unchanged), it is bound with that type, if the
// server then accepts the statement. A wire capture has the types the
// client declared: its statements are bound with those, not inferred. A
// text the server cannot prepare
// before the replay (it uses a table the workload creates) stays untyped.
func Type(ctx context.Context, c *capture.Capture, describe Describe) (map[int][]uint32, Typing) {
	type use struct {
		user, db string
		classes  []int
		runs     int64
	}
	uses := map[int]*use{}
	var order []int
	types := map[int][]uint32{}
	// A wire capture has the types the client declared: bound with
	// those, as the client did (0: the server infers, as it did).
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			if _, ok := types[st.Text]; !ok && st.Extended && declared(st.Types) {
				types[st.Text] = st.Types
			}
		}
	}
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			if _, ok := types[st.Text]; ok || !st.Extended || len(st.Params) == 0 || st.ParamsTruncated {
				continue
			}
			u := uses[st.Text]
			if u == nil {
				u = &use{user: s.User, db: s.Database, classes: make([]int, len(st.Params))}
				uses[st.Text] = u
				order = append(order, st.Text)
			}
			u.runs++
			for k, v := range st.Params {
				if k < len(u.classes) && v != nil {
					u.classes[k] = merge(u.classes[k], classOf(*v))
				}
			}
		}
	}
	var t Typing
	for _, text := range order {
		u := uses[text]
		candidate := false
		for _, cl := range u.classes {
			candidate = candidate || (cl != litNone && cl != litOther)
		}
		if !candidate || ctx.Err() != nil {
			continue
		}
		sql := c.Texts[text]
		inferred, err := describe(ctx, u.user, u.db, sql, nil)
		oids := make([]uint32, len(u.classes))
		n := 0
		for k, cl := range u.classes {
			loose := err != nil || (k < len(inferred) && (inferred[k] == oidText || inferred[k] == oidUnknown))
			switch {
			case !loose && k < len(inferred):
				oids[k] = inferred[k]
			case cl == litInt:
				oids[k], n = oidInt8, n+1
			case cl == litNumeric:
				oids[k], n = oidNumeric, n+1
			case cl == litBool || (cl == litTF && err != nil):
				// t and f print back as true and false: typed only when the
				// statement cannot run otherwise.
				oids[k], n = oidBool, n+1
			}
		}
		if n == 0 {
			continue
		}
		typed, err2 := describe(ctx, u.user, u.db, sql, oids)
		switch {
		case err2 == nil:
			types[text] = typed
			t.Texts++
			t.Params += n
			t.Executions += u.runs
		case err != nil:
			t.Failed++
		}
	}
	return types, t
}
