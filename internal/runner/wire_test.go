package runner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/capture/wire"
	"github.com/dbparity/dbparity/internal/engine/managed"
	"github.com/dbparity/dbparity/internal/result"
)

// pgbench captured from the wire, in its three protocols: through the
// capture proxy, with no statement logging on the server. Every
// statement is in the capture with the rows it affected and its
// parameters (prepared ones by name), and replayed onto a copy of the
// starting data it ends as the original run did.
func TestWireCapturePgbench(t *testing.T) {
	t.Parallel()
	wirePgbench(t, "proxy")
}

// The same read passively from the loopback interface's packets
// (AF_PACKET), the clients connected to the server itself.
func TestWireSniffPgbench(t *testing.T) {
	t.Parallel()
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0)
	if err != nil {
		t.Skipf("reading packets needs CAP_NET_RAW (run the tests as root): %v", err)
	}
	syscall.Close(fd)
	wirePgbench(t, "sniff")
}

func wirePgbench(t *testing.T, how string) {
	pgbench := pgTool(t, "pgbench")
	base := managedTarget(t)
	start := func(dir string) *managed.Instance {
		inst, err := managed.Start(context.Background(), managed.Options{DataDir: dir, Loopback: true,
			Settings: []string{"fsync=off", "autovacuum=off"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Stop() })
		return inst
	}
	inst := start(base.PGData)
	client(t, inst, pgbench, "-i", "-q", "-s", "1")
	inst.Stop()
	snapshot := base.PGData + "-start"
	if out, err := exec.Command("cp", "-a", base.PGData, snapshot).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, out)
	}
	inst = start(base.PGData)

	rec := wire.NewRecorder("test " + how)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	port := strconv.Itoa(inst.Port)
	if how == "proxy" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			served <- wire.Serve(ctx, ln, "127.0.0.1:"+strconv.Itoa(inst.Port), rec, wire.ProxyOptions{})
		}()
		port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	} else {
		pk, err := wire.ListenPackets("lo", inst.Port)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			st, err := pk.Run(ctx, rec)
			t.Logf("sniffed %d segments, %d dropped by the kernel, %d connections lost", st.Packets, st.KernelDrops, st.LostFlows)
			served <- err
		}()
	}
	const clients, txs = 3, 40
	for _, mode := range []string{"simple", "extended", "prepared"} {
		cmd := exec.Command(pgbench, "-h", "127.0.0.1", "-p", port, "-U", inst.User, "-n", "-c", strconv.Itoa(clients),
			"-j", "1", "-t", strconv.Itoa(txs), "-M", mode, inst.Database)
		cmd.Env = append(os.Environ(), "PGAPPNAME=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pgbench -M %s (%s): %v\n%s", mode, how, err, out)
		}
	}
	want := pgbenchState(t, Target{URL: inst.URL()})
	time.Sleep(200 * time.Millisecond) // the last packets are read
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	inst.Stop()
	c := rec.Capture()

	// Per mode, clients × txs updates of one account each.
	updates := map[string]int{}
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			text := c.Texts[st.Text]
			if !strings.HasPrefix(text, "UPDATE pgbench_accounts") {
				continue
			}
			mode := "simple"
			switch {
			case st.Prepared != "":
				mode = "prepared"
			case st.Extended:
				mode = "extended"
			}
			updates[mode]++
			if st.Rows == nil || *st.Rows != 1 || st.Error != nil {
				t.Fatalf("%s update %q: rows %v, error %v", mode, text, st.Rows, st.Error)
			}
			if mode != "simple" && (len(st.Params) != 2 || st.Params[0] == nil || st.ParamsTruncated) {
				t.Fatalf("%s update without its parameters: %+v", mode, st)
			}
		}
	}
	for _, mode := range []string{"simple", "extended", "prepared"} {
		if updates[mode] != clients*txs {
			t.Errorf("%s: %d account updates captured, pgbench ran %d", mode, updates[mode], clients*txs)
		}
	}
	capFile := filepath.Join(t.TempDir(), "wire.capture")
	if err := capture.Write(capFile, c); err != nil {
		t.Fatal(err)
	}
	back, err := capture.Read(capFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := back.Statements(); n != c.Statements() || back.Sessions[1].Statements[0].Rows == nil && c.Sessions[1].Statements[0].Rows != nil {
		t.Errorf("the file holds %d statements of %d, or lost the rows", n, c.Statements())
	}

	replayed := start(snapshot)
	var out bytesBuffer
	path := filepath.Join(t.TempDir(), "replay.json")
	err = Replay(context.Background(), ReplayOptions{Common: Common{Target: Target{URL: replayed.URL()}, Stdout: &out, Stderr: &out},
		Capture: capFile, Speed: 0, Label: "wire", Out: path})
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := pgbenchState(t, Target{URL: replayed.URL()}); got != want {
		t.Errorf("after the replay: %s\nafter the original run: %s", got, want)
	}
	if rp := r.Replay; rp.Replayed != rp.Statements || rp.Divergent() != 0 || rp.RowsCompared < 3*clients*txs*5 {
		t.Errorf("replayed %d of %d statements, %d divergent, rows of %d compared: %+v", rp.Replayed, rp.Statements, rp.Divergent(),
			rp.RowsCompared, rp.Outcomes)
	}
	if !strings.Contains(out.String(), "the rows of") {
		t.Errorf("the report does not say rows were compared:\n%s", out.String())
	}

	// Onto a copy without the odd accounts: their updates and reads find
	// no row, which the rows affected and returned show, by statement.
	again := base.PGData + "-again"
	if o, err := exec.Command("cp", "-a", snapshot, again).CombinedOutput(); err != nil {
		t.Fatalf("copy the starting state: %v\n%s", err, o)
	}
	replayed.Stop()
	thinned := start(again)
	execSQL(t, Target{URL: thinned.URL()}, "DELETE FROM pgbench_accounts WHERE aid % 2 = 1")
	var out2 bytesBuffer
	path = filepath.Join(t.TempDir(), "thinned.json")
	err = Replay(context.Background(), ReplayOptions{Common: Common{Target: Target{URL: thinned.URL()}, Stdout: &out2, Stderr: &out2},
		Capture: capFile, Speed: 0, Label: "thinned", Out: path})
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out2.String())
	}
	if r, err = result.Read(path); err != nil {
		t.Fatal(err)
	}
	differ := map[string]int64{}
	for _, o := range r.Replay.Outcomes {
		if o.Kind == "rows differ" {
			differ[o.Fingerprint] += o.Count
		}
	}
	var update, sel int64
	for fp, n := range differ {
		switch {
		case strings.HasPrefix(fp, "UPDATE pgbench_accounts"):
			update += n
		case strings.HasPrefix(fp, "SELECT abalance"):
			sel += n
		}
	}
	t.Logf("rows compared %d; on the thinned copy rows differ for %d account updates and %d reads", r.Replay.RowsCompared, update, sel)
	// About half of the 360 updates and reads touched an odd account.
	if update < 100 || update > 260 || sel != update {
		t.Errorf("rows differ: %d account updates, %d reads, want the same half of %d: %v", update, sel, 3*clients*txs, differ)
	}
}

// The psycopg 3 client (typed parameters, savepoints, COPY FROM STDIN, a
// reused statement name, two sessions contending for a row) captured
// from the wire, relayed to the server's socket file: the COPY's data is
// in the capture, so the replay at the captured pace ends with every
// table as the client left it, the COPY's included, and nothing
// divergent.
func TestWireCapturePsycopg(t *testing.T) {
	t.Parallel()
	py := psycopgClient(t)
	script, err := filepath.Abs("testdata/psycopg_client.py")
	if err != nil {
		t.Fatal(err)
	}
	var c *capture.Capture
	rec := record(t, func(inst *managed.Instance) {
		execSQL(t, Target{URL: inst.URL()}, `CREATE TABLE typed(note text); CREATE TABLE sp(v int); CREATE TABLE copied(v int);
			CREATE TABLE reused(v text); CREATE TABLE counter(id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)`)
	}, func(inst *managed.Instance) {
		c = throughProxy(t, inst, "psycopg", func(port int) *exec.Cmd {
			return exec.Command(py, script, "host=127.0.0.1 port="+strconv.Itoa(port)+" user="+inst.User+" dbname="+inst.Database)
		})
	})
	rec.capture = filepath.Join(t.TempDir(), "wire.capture")
	if err := capture.Write(rec.capture, c); err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			if strings.HasPrefix(c.Texts[st.Text], "COPY copied") && st.CopyData != nil && st.Rows != nil && *st.Rows == 5 {
				copied++
			}
		}
	}
	if copied != 1 {
		t.Errorf("%d COPY statements with their 5 rows' data in the capture:\n%s", copied, c.Summary())
	}
	r, out := replayVerified(t, rec, 1, 60*time.Second)
	rp, es := r.Replay, r.Replay.EndState
	if es.Match+es.ClockOnly != es.Of {
		t.Errorf("end state: %s\n%s", es.Summary, out)
	}
	if rp.Divergent() != 0 || rp.ReplayedTransactions != rp.CapturedTransactions {
		t.Errorf("%d divergent, transactions %d of %d: %+v", rp.Divergent(), rp.ReplayedTransactions, rp.CapturedTransactions, rp.Outcomes)
	}
	t.Logf("psycopg from the wire: %s; capture %.2f s, replay %.2f s, rows of %d statements compared", es.Summary, rec.captureS,
		rp.ReplaySeconds, rp.RowsCompared)
}

// A client that asks for TLS: without a certificate the proxy says there
// is none, so libpq's default (sslmode=prefer) goes on in the clear and is
// captured, and one that requires TLS gives up, with a line naming the
// flags; with a certificate the proxy ends TLS and captures inside it.
func TestWireProxyTLS(t *testing.T) {
	t.Parallel()
	psql := pgTool(t, "psql")
	base := managedTarget(t)
	inst, err := managed.Start(context.Background(), managed.Options{DataDir: base.PGData, Loopback: true,
		Settings: []string{"fsync=off", "autovacuum=off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	proxy := func(o wire.ProxyOptions) (port string, finish func() *capture.Capture) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rec := wire.NewRecorder("tls test")
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- wire.Serve(ctx, ln, "127.0.0.1:"+strconv.Itoa(inst.Port), rec, o) }()
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), func() *capture.Capture {
			stop()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			return rec.Capture()
		}
	}
	query := func(port, mode, sql string) (string, error) {
		cmd := exec.Command(psql, "-X", "-At", "-c", sql, "host=127.0.0.1 port="+port+" user="+inst.User+" dbname="+inst.Database+" sslmode="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	texts := func(c *capture.Capture) string { return strings.Join(c.Texts, "|") }

	var lines []string
	var mu sync.Mutex
	port, finish := proxy(wire.ProxyOptions{Notify: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }})
	if out, err := query(port, "prefer", "SELECT 'in the clear'"); err != nil {
		t.Fatalf("sslmode=prefer through the proxy: %v\n%s", err, out)
	}
	if out, err := query(port, "require", "SELECT 'never sent'"); err == nil || !strings.Contains(out, "SSL") {
		t.Errorf("sslmode=require without a certificate: %v\n%s", err, out)
	}
	c := finish()
	if !strings.Contains(texts(c), "SELECT 'in the clear'") || strings.Contains(texts(c), "never sent") {
		t.Errorf("captured %q", texts(c))
	}
	refused := 0
	for _, sk := range c.Skipped {
		if strings.Contains(sk.Reason, "asked for TLS") {
			refused = sk.Count
		}
	}
	if refused != 2 {
		t.Errorf("%d clients counted as refused TLS, want 2: %+v", refused, c.Skipped)
	}
	mu.Lock()
	if len(lines) != 1 || !strings.Contains(lines[0], "--tls-cert and --tls-key") {
		t.Errorf("notices %q: want one, the first time", lines)
	}
	mu.Unlock()

	port, finish = proxy(wire.ProxyOptions{TLS: &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}})
	if out, err := query(port, "require", "SELECT 'inside TLS'"); err != nil {
		t.Fatalf("sslmode=require with a certificate: %v\n%s", err, out)
	}
	if c := finish(); !strings.Contains(texts(c), "SELECT 'inside TLS'") {
		t.Errorf("captured %q", texts(c))
	}
}

// selfSigned makes a certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// pgJDBC (bench/replayclients' JdbcApp.java: typed setters, named
// server-side statements after the fifth execution, a hot row four threads
// update) captured through the proxy: the replay at the captured pace ends
// with every table as the client left it and no statement's rows differ.
func TestWireCapturePgJDBC(t *testing.T) {
	t.Parallel()
	java, jar := pgJDBC(t)
	schema, err := os.ReadFile("../../bench/replayclients/jdbc_schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	app, err := filepath.Abs("../../bench/replayclients/JdbcApp.java")
	if err != nil {
		t.Fatal(err)
	}
	var c *capture.Capture
	rec := record(t, func(inst *managed.Instance) {
		execSQL(t, Target{URL: inst.URL()}, string(schema))
	}, func(inst *managed.Instance) {
		c = throughProxy(t, inst, "pgJDBC", func(port int) *exec.Cmd {
			url := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/%s?user=%s&ApplicationName=jdbcapp", port, inst.Database, inst.User)
			return exec.Command(java, "-cp", jar, app, url, "4", "75") // 75 commits a thread however loaded the host
		})
	})
	rec.capture = filepath.Join(t.TempDir(), "wire.capture")
	if err := capture.Write(rec.capture, c); err != nil {
		t.Fatal(err)
	}
	typed, n := 0, 0
	for _, s := range c.Sessions {
		for _, st := range s.Statements {
			n++
			if len(st.Types) > 0 {
				typed++
			}
		}
	}
	for _, sk := range c.Skipped {
		if sk.Effect == capture.Dropped {
			t.Errorf("dropped from the capture: %+v", sk)
		}
	}
	if n < 1000 || typed < n/2 {
		t.Errorf("%d statements, %d with their parameters' types:\n%s", n, typed, c.Summary())
	}
	r, out := replayVerified(t, rec, 1, 60*time.Second)
	rp, es := r.Replay, r.Replay.EndState
	// jledger's ids come from a sequence the four sessions' inserts draw
	// from in whatever order their commits allow: the report names it.
	if es.Match+es.ClockOnly+es.Explained != es.Of || es.Of != 3 || es.Explained > 1 {
		t.Errorf("end state: %s\n%s", es.Summary, out)
	}
	for _, tb := range es.Tables {
		if tb.Cause != "" && (tb.Name != "public.jledger" || !strings.Contains(tb.Cause, "jledger_id_seq")) {
			t.Errorf("%s differs: %s", tb.Name, tb.Cause)
		}
	}
	if rp.RowsCompared < int64(n/2) || rp.Divergent() != 0 {
		t.Errorf("rows of %d statements compared, %d divergent: %+v", rp.RowsCompared, rp.Divergent(), rp.Outcomes)
	}
	t.Logf("pgJDBC from the wire: %d statements (%d typed); %s; capture %.2f s, replay %.2f s, rows of %d statements compared",
		n, typed, es.Summary, rec.captureS, rp.ReplaySeconds, rp.RowsCompared)
}

// pgJDBC finds java and the pgJDBC driver's jar in the local Maven
// repository (mvn dependency:get -Dartifact=org.postgresql:postgresql:42.7.4
// puts it there; .ci/run does), or skips: a failure under CI=true.
func pgJDBC(t *testing.T) (java, jar string) {
	t.Helper()
	java, err := exec.LookPath("java")
	home, _ := os.UserHomeDir()
	jar = filepath.Join(home, ".m2/repository/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar")
	if err == nil {
		_, err = os.Stat(jar)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no java or pgJDBC driver: %v", err)
		}
		t.Skipf("no java or pgJDBC driver (%v): apt-get install default-jdk-headless; mvn dependency:get -Dartifact=org.postgresql:postgresql:42.7.4", err)
	}
	return java, jar
}

// throughProxy runs the client that cmd makes, given the proxy's port,
// through a capture proxy relaying to inst's socket file, and returns
// what the proxy recorded.
func throughProxy(t *testing.T, inst *managed.Instance, name string, cmd func(port int) *exec.Cmd) *capture.Capture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrec := wire.NewRecorder("test proxy")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- wire.Serve(ctx, ln, filepath.Join(inst.SocketDir, ".s.PGSQL."+strconv.Itoa(inst.Port)), wrec, wire.ProxyOptions{})
	}()
	out, err := cmd(ln.Addr().(*net.TCPAddr).Port).CombinedOutput()
	stop()
	if serr := <-served; serr != nil {
		t.Fatal(serr)
	}
	if err != nil {
		t.Fatalf("%s client through the proxy: %v\n%s", name, err, out)
	}
	return wrec.Capture()
}
