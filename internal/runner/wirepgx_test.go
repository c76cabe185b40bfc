package runner

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/wire"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// A Go application on pgx, captured through the proxy. pgx prepares each
// statement without naming its parameters' types, learns them from the
// server's ParameterDescription, and then sends integers, floats,
// booleans, timestamps and UUIDs in binary: the capture decodes them
// with the types the server described, so no statement is dropped, and
// the replay onto an empty server ends with the table as the
// application left it. Both of pgx's ways: statements prepared by name
// (its default) and described without a name (QueryExecModeDescribeExec).
func TestWireCapturePgx(t *testing.T) {
	t.Parallel()
	start := func() *managed.Instance {
		base := managedTarget(t)
		inst, err := managed.Start(context.Background(), managed.Options{DataDir: base.PGData, Loopback: true,
			Settings: []string{"fsync=off", "autovacuum=off"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Stop() })
		return inst
	}
	inst := start()
	rec := wire.NewRecorder("test pgx")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- wire.Serve(ctx, ln, "127.0.0.1:"+strconv.Itoa(inst.Port), rec, wire.ProxyOptions{}) }()
	url := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable&application_name=pgxapp", inst.User,
		ln.Addr().(*net.TCPAddr).Port, inst.Database)

	const rows = 60
	for _, mode := range []string{"cache_statement", "describe_exec"} {
		conn, err := pgx.Connect(context.Background(), url+"&default_query_exec_mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "cache_statement" {
			if _, err := conn.Exec(context.Background(), `CREATE TABLE pgxapp (id int8 PRIMARY KEY, n int4, s text, f float8,
				at timestamptz, ok bool, u uuid, d numeric)`); err != nil {
				t.Fatal(err)
			}
		}
		at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		off := 0
		if mode == "describe_exec" {
			off = rows
		}
		for i := range rows {
			id := int64(off + i)
			u := [16]byte{byte(id), 1, 2, 3}
			if _, err := conn.Exec(context.Background(), "INSERT INTO pgxapp VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
				id, int32(i*7), fmt.Sprintf("row %d", id), float64(i)/3, at.Add(time.Duration(i)*time.Minute), i%2 == 0, u,
				fmt.Sprintf("%d.25", i)); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				if _, err := conn.Exec(context.Background(), "UPDATE pgxapp SET n = n + $1, f = f * $2 WHERE id = $3", int32(5), 1.5, id); err != nil {
					t.Fatal(err)
				}
			}
			var n int32
			if err := conn.QueryRow(context.Background(), "SELECT n FROM pgxapp WHERE id = $1 AND ok = $2 OR id = $1", id, true).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close(context.Background())
	}
	want := tableDigest(t, Target{URL: inst.URL()}, "pgxapp")
	time.Sleep(200 * time.Millisecond)
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	c := rec.Capture()
	sent := 0
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			if st.ParamsTruncated {
				t.Errorf("%q: parameters not decoded: %+v", c.Texts[st.Text], st)
			}
			sent++
		}
	}
	for _, sk := range c.Skipped {
		t.Errorf("skipped: %+v", sk)
	}
	if want := 2*rows*2 + 2*rows/3 + 1; sent < want {
		t.Errorf("%d statements captured, the application sent at least %d", sent, want)
	}
	capFile := filepath.Join(t.TempDir(), "pgx.capture")
	if err := capture.Write(capFile, c); err != nil {
		t.Fatal(err)
	}
	inst.Stop()
	replayed := start()
	var out bytesBuffer
	path := filepath.Join(t.TempDir(), "replay.json")
	if err := Replay(context.Background(), ReplayOptions{Common: Common{Target: Target{URL: replayed.URL()}, Stdout: &out, Stderr: &out},
		Capture: capFile, Speed: 0, Label: "pgx", Out: path}); err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if rp := r.Replay; rp.Replayed != rp.Statements || rp.Divergent() != 0 {
		t.Errorf("replayed %d of %d statements, %d divergent: %+v\n%s", rp.Replayed, rp.Statements, rp.Divergent(), rp.Outcomes, out.String())
	}
	if got := tableDigest(t, Target{URL: replayed.URL()}, "pgxapp"); got != want {
		t.Errorf("after the replay: %s\nafter the application: %s", got, want)
	}
}

// tableDigest is a table's rows in one text, in key order.
func tableDigest(t *testing.T, tg Target, table string) string {
	t.Helper()
	var s string
	queryRow(t, tg, "SELECT count(*) || ':' || md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM "+table+" x", &s)
	return s
}
