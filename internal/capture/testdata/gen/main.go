// Command gen drives the extended query protocol the way applications do,
// for gen.sh: unnamed and named prepared statements, NULL parameters,
// parameters holding quotes and newlines, a long parameter (truncated when
// the server sets log_parameter_max_length) and a statement that fails at
// execution. It is not part of dbparity and is built only by gen.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
)

func main() {
	host := flag.String("host", "", "socket directory")
	flag.Parse()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s user=postgres dbname=postgres application_name=gen-driver", *host))
	if err != nil {
		fail(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fail(err)
	}
	defer conn.Close(ctx)
	must := func(_ any, err error) {
		if err != nil {
			fail(err)
		}
	}
	must(conn.Exec(ctx, "create temp table gen_t (id int, note text)", pgx.QueryExecModeSimpleProtocol))
	// Unnamed statements, text parameters: parse, bind, execute.
	must(conn.Exec(ctx, "insert into gen_t values ($1, $2)", pgx.QueryExecModeExec, 1, "it's a \"quote\""))
	must(conn.Exec(ctx, "insert into gen_t values ($1, $2)", pgx.QueryExecModeExec, 2, nil))
	must(conn.Exec(ctx, "insert into gen_t\nvalues ($1, $2)", pgx.QueryExecModeExec, 3, "line one\nline two\n\ttabbed 'x'"))
	must(conn.Exec(ctx, "select id, note from gen_t where note = $1 or id = $2", pgx.QueryExecModeExec, strings.Repeat("0123456789", 4), 4))
	// A named prepared statement, parsed once and executed twice.
	must(conn.Prepare(ctx, "gen_upd", "update gen_t set note = $2 where id = $1"))
	must(conn.Exec(ctx, "gen_upd", 1, "first"))
	must(conn.Exec(ctx, "gen_upd", 2, nil))
	// Fails at execution, after parse and bind succeeded.
	if _, err := conn.Exec(ctx, "select 10 / $1::int", pgx.QueryExecModeExec, 0); err == nil {
		fail(fmt.Errorf("division by zero did not fail"))
	}
	must(conn.Exec(ctx, "select count(*) from gen_t", pgx.QueryExecModeExec))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
