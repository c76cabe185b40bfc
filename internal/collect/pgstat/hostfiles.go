package pgstat

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/engine"
)

// HostAccess tells whether the connection's role may read the server
// host's files with pg_read_file and list them with pg_ls_dir: a
// superuser, or a member of pg_read_server_files (for paths outside the
// data directory) that may also execute both functions (revoked from
// PUBLIC: membership alone is "permission denied for function
// pg_read_file"). When it may not, warning is one line naming the GRANTs
// it lacks, and the database to make them in: a function's EXECUTE is
// granted in one database (each has its own pg_proc), so a grant made
// from psql's default database does not reach the target's.
func HostAccess(ctx context.Context, c engine.Conn) (ok bool, warning string, err error) {
	var role, db string
	var super, member, readFile, lsDir bool
	err = c.QueryRow(ctx, `SELECT current_user::text, current_database()::text,
		coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false),
		pg_has_role(current_user, 'pg_read_server_files', 'MEMBER'),
		has_function_privilege(current_user, '`+readFileFn+`', 'EXECUTE'),
		has_function_privilege(current_user, '`+lsDirFn+`', 'EXECUTE')`).Scan(&role, &db, &super, &member, &readFile, &lsDir)
	if err != nil {
		return false, "", fmt.Errorf("check the role's privileges: %w", err)
	}
	ok = super || (member && readFile && lsDir)
	if !ok {
		r := quoteRole(role)
		var grants []string
		if !member {
			grants = append(grants, "GRANT pg_read_server_files TO "+r)
		}
		if !readFile {
			grants = append(grants, "GRANT EXECUTE ON FUNCTION "+readFileFn+" TO "+r)
		}
		if !lsDir {
			grants = append(grants, "GRANT EXECUTE ON FUNCTION "+lsDirFn+" TO "+r)
		}
		where := "as a superuser"
		if !readFile || !lsDir {
			// EXECUTE is granted in the database connected to.
			where = fmt.Sprintf("as a superuser connected to the target's database (psql -d %s; EXECUTE granted in another database does not count)", shellWord(db))
		}
		warning = fmt.Sprintf("the database host's OS figures, DB CPU and disclosure need its /proc and /sys: %s, run %s; or give --db-host-metrics http://DBHOST:9100/metrics (node_exporter)",
			where, strings.Join(grants, "; "))
	}
	return ok, warning, nil
}

// shellWord writes s as a shell takes it as one word: bare when it is
// plain, else single-quoted.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The functions the host's files are read with, as GRANT names them.
const (
	readFileFn = "pg_read_file(text, bigint, bigint, boolean)"
	lsDirFn    = "pg_ls_dir(text, boolean, boolean)"
)

// quoteRole writes a role name as SQL takes it: bare when it is a plain
// lower-case name, else double-quoted.
func quoteRole(role string) string {
	plain := role != ""
	for i, r := range role {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			plain = false
		}
	}
	if plain && role != "user" && role != "public" {
		return role
	}
	return pgx.Identifier{role}.Sanitize()
}

// HostFiles reads files of the server's host through pg_read_file, each
// reading one statement (one transaction in the server's counters).
type HostFiles struct {
	c     engine.Conn
	reads int64
}

// NewHostFiles reads through c, whose role HostAccess has allowed.
func NewHostFiles(c engine.Conn) *HostFiles { return &HostFiles{c: c} }

// Reads is the number of statements sent.
func (h *HostFiles) Reads() int64 { return h.reads }

// Size limits: pg_read_file allocates the length asked for, so each file
// gets what its kind needs, not one large bound.
const (
	hostFileMax = 256 << 10 // /proc/diskstats of a host with hundreds of devices
	procFileMax = 4 << 10   // /proc/PID/stat and schedstat: one line
)

// Read returns the contents of the paths that exist (a missing one is
// absent) and, with procs, the /proc/PID/stat and /proc/PID/schedstat of
// the server's processes: the postmaster (from postmaster.pid in the data
// directory), every process pg_stat_activity lists, background processes
// included, and the processes of also (the last reading's). A backend
// leaves pg_stat_activity before its process exits and is reaped, and
// only then is its CPU time in the postmaster's cutime: asking for the
// PIDs seen before keeps its time counted until then. postmaster is 0
// when it could not be read.
func (h *HostFiles) Read(ctx context.Context, paths []string, procs bool, also ...int) (files map[string][]byte, postmaster int, err error) {
	// A process that exits while its /proc file is read fails the read
	// with ESRCH, which pg_read_file's missing_ok does not cover; read
	// again, when it is gone for good (ENOENT, missing).
	for range 3 {
		files, postmaster, err = h.read(ctx, paths, procs, also)
		if err == nil || !procs || !strings.Contains(err.Error(), "No such process") {
			break
		}
	}
	return files, postmaster, err
}

func (h *HostFiles) read(ctx context.Context, paths []string, procs bool, also []int) (files map[string][]byte, postmaster int, err error) {
	q := `SELECT p, pg_read_file(p, 0, $2, true) FROM unnest($1::text[]) AS p`
	if procs {
		q += `
UNION ALL
SELECT 'postmaster.pid', pg_read_file('postmaster.pid', 0, 64, true)
UNION ALL
SELECT f, pg_read_file(f, 0, $3, true)
FROM (SELECT '/proc/' || pid || '/' || x AS f
      FROM (SELECT pid FROM pg_stat_activity
            UNION SELECT nullif(split_part(pg_read_file('postmaster.pid', 0, 64, true), E'\n', 1), '')::int
            UNION SELECT unnest($4::int[])) s,
           unnest(ARRAY['stat', 'schedstat']) AS x
      WHERE pid IS NOT NULL) g`
	}
	args := []any{paths, hostFileMax}
	if procs {
		if also == nil {
			also = []int{}
		}
		args = append(args, procFileMax, also)
	}
	h.reads++
	rows, err := h.c.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("read the database host's files: %w", err)
	}
	defer rows.Close()
	files = make(map[string][]byte, len(paths)+16)
	for rows.Next() {
		var p string
		var content *string
		if err := rows.Scan(&p, &content); err != nil {
			return nil, 0, fmt.Errorf("read the database host's files: %w", err)
		}
		if content == nil {
			continue
		}
		if p == "postmaster.pid" { // the data directory's, relative: no path of the host
			postmaster, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(*content, "\n", 2)[0]))
			continue
		}
		files[p] = []byte(*content)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the database host's files: %w", err)
	}
	return files, postmaster, nil
}

// List returns the names in a directory of the server's host, or an
// error where the role may not list it (pg_ls_dir is a superuser's unless
// granted).
func (h *HostFiles) List(ctx context.Context, dir string) ([]string, error) {
	h.reads++
	rows, err := h.c.Query(ctx, `SELECT pg_ls_dir($1, true, false)`, dir)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
