package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbparity/dbparity/internal/collect/nodeexp/exportertest"
	"github.com/dbparity/dbparity/internal/result"
)

// A count too large for any number type is too large, not "not a whole
// number", and the message gives the limit; so is one above the limit.
func TestCountTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, users := range []string{"99999999999999999999", "1000001"} {
		code, _, stderr := dbparity(t, dir, "run", "--users", users)
		if code != 2 || !strings.Contains(stderr, "-users: too large: at most 1000000") || strings.Contains(stderr, "whole number") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--users %s: exit %d, %q; want exit 2 and one line saying it is too large, at most 1000000", users, code, stderr)
		}
	}
	if code, _, stderr := dbparity(t, dir, "run", "--users", "-99999999999999999999"); code != 2 || !strings.Contains(stderr, "at least 1") {
		t.Errorf("--users -99999999999999999999: exit %d, %q", code, stderr)
	}
}

// A --tls-key that its group or others may read is refused (exit 2),
// naming the file and chmod 600, as ssh refuses such a key (before: the
// proxy started with it); one readable by its owner only is taken.
func TestTLSKeyReadableByOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	capture := func() (int, string) {
		code, _, stderr := dbparity(t, dir, "capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--tls-cert", cert,
			"--tls-key", keyFile, "--out", "x.capture", "--duration", "300ms")
		return code, stderr
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		os.Chmod(keyFile, mode)
		code, stderr := capture()
		if code != 2 || !strings.Contains(stderr, "--tls-key "+keyFile) || !strings.Contains(stderr, "chmod 600 "+keyFile) ||
			strings.Contains(stderr, "capturing") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("a key of mode %04o: exit %d, %q; want exit 2 and one line naming it and chmod 600", mode, code, stderr)
		}
	}
	os.Chmod(keyFile, 0o600)
	if code, stderr := capture(); code != 1 || !strings.Contains(stderr, "capturing") || strings.Contains(stderr, "chmod") {
		t.Errorf("a key of mode 0600: exit %d, %q; want the capture to run (and find no client)", code, stderr)
	}
}

// countWatch is a command's stderr that signals once marker has been
// written n times.
type countWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	n      int
	seen   chan struct{}
}

func (w *countWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := strings.Count(w.buf.String(), w.marker)
	w.buf.Write(p)
	if before < w.n && strings.Count(w.buf.String(), w.marker) >= w.n {
		close(w.seen)
	}
	return len(p), nil
}

func (w *countWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// interruptAt starts the binary, sends it SIGINT a pause after its
// stderr has held marker n times, and returns its exit code and stderr.
func interruptAt(t *testing.T, dir, marker string, n int, pause time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	w := &countWatch{marker: marker, n: n, seen: make(chan struct{})}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.seen:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v: %q not written %d times within a minute:\n%s", args, marker, n, w.String())
	}
	time.Sleep(pause)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("%v: still running 15 s after the interrupt", args)
	}
	return cmd.ProcessState.ExitCode(), w.String()
}

// An interrupted load or capture says what it keeps, not a run's "what
// was measured is written": a load, that the half-finished load is not
// recorded as loaded and the next one starts over; a capture from the
// wire, that what it recorded is written to its file; one from logs, that
// nothing is written (and it stops at once, even when the log is a pipe
// that never ends: before, it went on reading).
func TestInterruptSaysWhatIsKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := "what was measured is written"

	code, stderr := interruptAt(t, dir, "loading", 1, 0, "load", "--target", "sqlite://"+filepath.Join(dir, "oe.db"), "--warehouses", "4")
	if code != 130 || strings.Contains(stderr, run) ||
		!strings.Contains(stderr, "dbparity: stopping: the load stops where it is: the half-finished load is not recorded as loaded") ||
		!strings.Contains(lastLine(stderr), "not recorded as loaded") || !strings.Contains(lastLine(stderr), "starts over") {
		t.Errorf("an interrupted load: exit %d:\n%s", code, stderr)
	}
	if code, _, stderr := dbparity(t, dir, "run", "--target", "sqlite://"+filepath.Join(dir, "oe.db"), "--duration", "1s"); code == 0 ||
		!strings.Contains(stderr, "not loaded") {
		t.Errorf("a run on the interrupted load: exit %d, %s", code, stderr)
	}

	code, stderr = interruptAt(t, dir, "capturing:", 1, 0, "capture", "--proxy", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--out", "wire.capture")
	if strings.Contains(stderr, run) || !strings.Contains(stderr, "dbparity: stopping: the capture ends: the statements recorded until now are written to wire.capture") {
		t.Errorf("an interrupted capture from the wire: exit %d:\n%s", code, stderr)
	}

	// A log that never ends: a named pipe nobody writes to.
	fifo := filepath.Join(dir, "postgresql.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "capture", "--out", "logs.capture", fifo)
	cmd.Dir = dir
	w := newOutputWatch("stopping")
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("a capture from logs still running 5 s after the interrupt:\n%s", w.buf.String())
	}
	stderr = w.buf.String()
	if code := cmd.ProcessState.ExitCode(); code != 130 || strings.Contains(stderr, run) ||
		!strings.Contains(stderr, "dbparity: stopping: reading the logs stops: no capture is written") ||
		!strings.Contains(lastLine(stderr), "no capture was written") {
		t.Errorf("an interrupted capture from logs: exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs.capture")); err == nil {
		t.Error("an interrupted capture from logs wrote its file")
	}
}

// After an interrupted ab, compare PREFIX-*.json compares the complete
// runs and names the interrupted one, left out, on a line of its own
// (before: exit 2 on it, "a failed run"); --force compares it too; with
// fewer than two complete runs left, exit 2 saying so.
func TestCompareLeavesOutInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := dbparity(t, dir, "load", "--target", "sqlite://a.db"); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a.db")) // whole: its WAL checkpointed as the load closed it
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "b.db"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Interrupted in round 2, 0.5 s into the 2 s warm-up of its first run
	// (the third to start).
	code, stderr := interruptAt(t, dir, "running order-entry", 3, 500*time.Millisecond, "ab", "--a", "sqlite://a.db", "--b", "sqlite://b.db", "--rounds", "2", "--users", "1",
		"--duration", "1s", "--warmup", "2s", "--no-collect", "--prefix", "ab")
	if code != 130 {
		t.Fatalf("ab: exit %d:\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ab-*.json"))
	var partial string
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		if r.Partial {
			partial = filepath.Base(f)
		}
	}
	if len(files) != 3 || partial == "" {
		t.Fatalf("the interrupted ab left %v, partial %q", files, partial)
	}
	args := []string{"compare"}
	for _, f := range files {
		args = append(args, filepath.Base(f))
	}
	code, stdout, stderr := dbparity(t, dir, args...)
	if code != 0 || strings.TrimSpace(stderr) != "dbparity compare: left out "+partial+
		": its run was interrupted (partial, no transaction completed in the measured window); --force compares it" ||
		!strings.Contains(stdout, "the answer") || strings.Contains(stdout, partial) {
		t.Errorf("compare after an interrupted ab: exit %d\nstderr: %s\nstdout: %s", code, stderr, stdout)
	}
	if code, _, stderr := dbparity(t, dir, append([]string{"compare", "--force"}, args[1:]...)...); code != 0 || strings.Contains(stderr, "left out") {
		t.Errorf("compare --force: exit %d, %s", code, stderr)
	}
	var complete string
	for _, f := range files {
		if filepath.Base(f) != partial {
			complete = filepath.Base(f)
		}
	}
	code, _, stderr = dbparity(t, dir, "compare", complete, partial)
	if last := lastLine(stderr); code != 2 || !strings.Contains(last, "1 complete run(s) left once the interrupted "+partial+" are left out: compare needs two") {
		t.Errorf("compare of one complete run and the interrupted one: exit %d, %s", code, stderr)
	}
}

// A --db-host-metrics URL is shown without its query and user info, in
// messages and in the result (its recorded command line), where either
// may hold a credential: the exporter alone is sent them.
func TestMetricsURLShownWithoutQuery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := dbparity(t, dir, "load", "--target", "sqlite://oe.db"); code != 0 {
		t.Fatalf("load: %s", stderr)
	}
	secret := "s3cret"
	code, _, stderr := dbparity(t, dir, "run", "--target", "sqlite://oe.db", "--users", "1", "--duration", "1s", "--warmup", "0s",
		"--db-host", "node-exporter", "--db-host-metrics", "http://user:"+secret+"pw@127.0.0.1:1/metrics?token="+secret)
	if code != 2 || strings.Contains(stderr, secret) || !strings.Contains(stderr, "scrape http://127.0.0.1:1/metrics:") {
		t.Errorf("an exporter that does not answer: exit %d, %q; want it named as http://127.0.0.1:1/metrics", code, stderr)
	}
	t.Run("result", func(t *testing.T) {
		url := exportertest.Start(t) // skipped without node_exporter (a failure under CI=true)
		code, stdout, stderr := dbparity(t, dir, "run", "--target", "sqlite://oe.db", "--users", "1", "--duration", "1s", "--warmup", "0s",
			"--db-host", "node-exporter", "--db-host-metrics="+url+"?token="+secret, "--out", "r.json")
		b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
		r, err := result.Read(filepath.Join(dir, "r.json"))
		if err != nil {
			t.Fatalf("exit %d: %v\n%s", code, err, stderr)
		}
		if code != 0 || strings.Contains(string(b), secret) || strings.Contains(stdout+stderr, secret) ||
			!slices.Contains(r.Command, "--db-host-metrics="+url) || strings.Contains(stderr, "password") {
			t.Errorf("exit %d; the result (its command %q), its output or a warning of a password show the query:\n%s", code, r.Command, stderr)
		}
	})
}
