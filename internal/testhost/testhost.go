// Package testhost gives a test or a benchmark a database host of its
// own on this machine: a managed PostgreSQL or MariaDB server inside its
// own network, PID, mount and UTS namespaces (its own /proc, its own host
// name, its own interfaces), on CPUs set apart with a cgroup v1 cpuset,
// reached from the driver's namespace over a veth pair in 198.18.0.0/15
// (RFC 2544's benchmarking range) through a relay that adds the round
// trip of a LAN, optionally under a tbf bandwidth cap, with a
// node_exporter beside the server when asked.
//
// Host N (1, 2, ...) is:
//
//   - the veth pair dbpDN (the driver's end, 198.18.N.1/30) and eth0
//     inside the host (created as dbpHN, 198.18.N.2/30), IPv6 off;
//   - the namespaces of a process tree started from the test binary
//     itself (this package's init function recognises its role): PID 1
//     mounts the namespace's /proc, sets the host name dbphost-N and
//     reaps orphans; its child, the agent, brings the link up, starts the
//     server (listening on the host's loopback), the exporter on
//     198.18.N.2:9100 and the relay on 198.18.N.2:5432 (MariaDB: 3306),
//     which forwards every connection to the server with Delay/2 added
//     each way;
//   - the cpuset /sys/fs/cgroup/cpuset/dbparity-host-N, which PID 1 joins
//     before the agent exists, so the server and the exporter inherit
//     it; once they run, PID 1 and the agent (the relay) leave it again:
//     the relay stands for the network, whose cost is no host's.
//
// The server is stopped inside the host, by the agent, by the PIDs the
// namespace gives it: a server there writes its namespace's numbers into
// postmaster.pid or its PID file, which name other processes outside.
// From outside only the process this package started (the namespace's
// PID 1, by the PID it has here) is ever signalled: SIGKILL when the
// agent does not end within a minute, which makes the kernel kill the
// whole namespace. PID 1 also gets SIGKILL when the test process dies
// (Pdeathsig). Close removes the link, the cpuset and the data
// directory it made.
//
// Leftovers of a test that was killed outright are removed by the next
// Start (or Cleanup): each host records its owner (the test process and
// its start time) in /run/dbparity-testhost/N.json; a host whose owner is
// gone has its PID 1 killed (when it is still the process recorded), its
// link deleted, its cpuset and the data directory Start made removed, and any dbpD*/dbpH* link or
// dbparity-host-* cpuset that no live host records is removed too.
//
// Host.Command runs a command as one of the host's processes (in its
// namespaces, through nsenter: a capture on its eth0, say). A driver
// host (StartDriver, StartDriverHost: driverhost.go) is the other side:
// network, PID, mount and UTS namespaces of their own for a driver
// process, at 198.19.M.2 on a veth pair dbpCM, routed to the test hosts
// through the driver's namespace, cleaned up as a host is.
//
// Start skips the test (fails it under CI=true) when it cannot run: not
// root, no ip, no cgroup v1 cpuset, or no server binaries.
package testhost

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"golang.org/x/sys/unix"

	"github.com/dbparity/dbparity/internal/collect/nodeexp/exportertest"
	"github.com/dbparity/dbparity/internal/cpuset"
	"github.com/dbparity/dbparity/internal/engine/managed"
)

// Options describe one host.
type Options struct {
	Engine   managed.Engine // managed.Postgres (the default) or managed.MariaDB
	DataDir  string         // the server's data directory; "" for a new one, removed by Close
	Settings []string       // the server's settings, name=value
	// CPUs are the host's CPUs (its cpuset); nil for the last CPU this
	// process may use.
	CPUs []int
	// Delay is the round trip the link adds between the driver and the
	// server: the relay holds every chunk Delay/2 each way. 0 adds none.
	Delay time.Duration
	// RateMbit caps the link each way with tbf (0: no cap).
	RateMbit float64
	// NodeExporter runs prometheus-node-exporter inside the host on
	// 198.18.N.2:9100.
	NodeExporter bool
}

// Host is a running test host.
type Host struct {
	N          int
	Engine     managed.Engine
	Hostname   string // the host's, dbphost-N
	Addr       string // the host's address, 198.18.N.2
	DriverAddr string // the driver's end of the link, 198.18.N.1
	Link       string // the driver's end's name, dbpDN
	Port       int    // the database's port on Addr (the relay's)
	// ServerPort is the server's own port on the host's loopback, which
	// the relay forwards to; only the host reaches it.
	ServerPort        int
	User, Password    string
	Database, Version string
	DataDir           string
	CPUs              []int
	Delay             time.Duration
	MetricsURL        string // node_exporter's, "" without
	ServerPIDInside   int    // the server's PID in the host's namespace: never signal it from here
	InitPID           int    // the namespace's PID 1 as this process sees it
	AgentPID          int    // the agent as this process sees it
	cmd               *exec.Cmd
	stdin             io.WriteCloser
	stdout            *bufio.Reader
	stderr            *lockedBuffer
	mu                sync.Mutex // the agent's pipe
	tmpDir, cpusetDir string
	ready, closed     bool
}

// The names this package gives what it makes.
const (
	linkPrefix   = "dbpD"
	peerPrefix   = "dbpH"
	cpusetRoot   = "/sys/fs/cgroup/cpuset"
	cpusetPrefix = "dbparity-host-"
	stateDir     = "/run/dbparity-testhost"
	maxHosts     = 250
)

// Unavailable says why a host cannot be started here ("" when it can).
func Unavailable(e managed.Engine) string {
	switch {
	case os.Geteuid() != 0:
		return "a test host needs root (namespaces, veth, cpusets)"
	case !have("ip"):
		return "a test host needs ip (iproute2)"
	case !exists(filepath.Join(cpusetRoot, "cpuset.cpus")):
		return "a test host needs the cgroup v1 cpuset hierarchy at " + cpusetRoot
	case !exists("/proc/self/ns/net") || !exists("/proc/self/ns/pid"):
		return "a test host needs network and PID namespaces"
	}
	if e == managed.MariaDB {
		if !exists("/usr/sbin/mariadbd") && !exists("/usr/bin/mariadbd") {
			return "no MariaDB server (mariadbd): apt-get install mariadb-server"
		}
	} else if !have("initdb") {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			return "no PostgreSQL server binaries (initdb)"
		}
	}
	return ""
}

func have(prog string) bool { _, err := exec.LookPath(prog); return err == nil }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Start starts a host and stops it when the test ends. The test is
// skipped when hosts cannot run here (Unavailable), and fails instead
// under CI=true.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	if o.Engine == "" {
		o.Engine = managed.Postgres
	}
	if why := Unavailable(o.Engine); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	if o.NodeExporter && exporterBinary() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but prometheus-node-exporter is not installed")
		}
		t.Skip("prometheus-node-exporter is not installed: apt-get install prometheus-node-exporter to run this test")
	}
	h, err := StartHost(o)
	if h != nil {
		t.Cleanup(func() {
			if err := h.Close(); err != nil {
				t.Errorf("host %d: %v", h.N, err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func exporterBinary() string {
	if exists(exportertest.Binary) {
		return exportertest.Binary
	}
	if p, err := exec.LookPath("node_exporter"); err == nil {
		return p
	}
	return ""
}

// StartHost is Start for a benchmark: the caller must Close the host,
// also when StartHost fails and returns one.
func StartHost(o Options) (*Host, error) {
	if o.Engine == "" {
		o.Engine = managed.Postgres
	}
	if why := Unavailable(o.Engine); why != "" {
		return nil, errors.New(why)
	}
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	cleanupLocked()
	n := 1
	for ; n <= maxHosts && exists(statePath(n)); n++ {
	}
	if n > maxHosts {
		return nil, fmt.Errorf("%d test hosts already run", maxHosts)
	}
	h := &Host{N: n, Engine: o.Engine, Hostname: "dbphost-" + strconv.Itoa(n), Delay: o.Delay,
		Addr: fmt.Sprintf("198.18.%d.2", n), DriverAddr: fmt.Sprintf("198.18.%d.1", n),
		Link: linkPrefix + strconv.Itoa(n), stderr: &lockedBuffer{}}
	if h.CPUs = o.CPUs; h.CPUs == nil {
		all, err := cpuset.Available()
		if err != nil {
			return nil, err
		}
		h.CPUs = all[len(all)-1:]
	}
	if h.DataDir = o.DataDir; h.DataDir == "" {
		if h.tmpDir, err = os.MkdirTemp("", "dbparity-host-"); err != nil {
			return nil, err
		}
		os.Chmod(h.tmpDir, 0o755) // the server's user enters it
		h.DataDir = filepath.Join(h.tmpDir, string(o.Engine))
	}
	return h, h.start(o)
}

// state is what a host records of itself, for a later cleanup.
type state struct {
	Owner, OwnerStart int64  // the test process and its start time
	Init, InitStart   int64  // the namespace's PID 1 as seen here
	TmpDir            string // the data directory's parent StartHost made, if it did
}

func statePath(n int) string { return filepath.Join(stateDir, strconv.Itoa(n)+".json") }

func (h *Host) start(o Options) error {
	// The cpuset first: PID 1 joins it before anything else runs.
	h.cpusetDir = filepath.Join(cpusetRoot, cpusetPrefix+strconv.Itoa(h.N))
	if err := os.Mkdir(h.cpusetDir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cpuset: %w", err)
	}
	mems, _ := os.ReadFile(filepath.Join(cpusetRoot, "cpuset.mems"))
	if err := os.WriteFile(filepath.Join(h.cpusetDir, "cpuset.cpus"), []byte(cpuset.Format(h.CPUs)), 0); err != nil {
		return fmt.Errorf("cpuset %s: cpus %s: %w", h.cpusetDir, cpuset.Format(h.CPUs), err)
	}
	if err := os.WriteFile(filepath.Join(h.cpusetDir, "cpuset.mems"), bytes.TrimSpace(mems), 0); err != nil {
		return fmt.Errorf("cpuset %s: mems: %w", h.cpusetDir, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := config{N: h.N, Hostname: h.Hostname, Addr: h.Addr, Peer: peerPrefix + strconv.Itoa(h.N), Engine: o.Engine,
		DataDir: h.DataDir, Settings: o.Settings, OneWay: o.Delay / 2, RateMbit: o.RateMbit}
	if o.NodeExporter {
		cfg.NodeExporter = exporterBinary()
	}
	b, _ := json.Marshal(cfg)
	h.cmd = exec.Command(exe)
	h.cmd.Env = append(os.Environ(), envRole+"=init", envConfig+"="+string(b))
	h.cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Pdeathsig:  syscall.SIGKILL,
	}
	h.cmd.Stderr = h.stderr
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	h.stdout = bufio.NewReader(out)
	if err := h.cmd.Start(); err != nil {
		return fmt.Errorf("start the host's namespaces: %w", err)
	}
	h.InitPID = h.cmd.Process.Pid
	st := state{Owner: int64(os.Getpid()), OwnerStart: startTime(os.Getpid()), Init: int64(h.InitPID), InitStart: startTime(h.InitPID), TmpDir: h.tmpDir}
	sb, _ := json.Marshal(st)
	if err := os.WriteFile(statePath(h.N), sb, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.cpusetDir, "cgroup.procs"), []byte(strconv.Itoa(h.InitPID)), 0); err != nil {
		return fmt.Errorf("cpuset: join: %w", err)
	}
	peer := cfg.Peer
	for _, a := range [][]string{
		{"link", "add", h.Link, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", strconv.Itoa(h.InitPID)},
	} {
		if err := run("ip", a...); err != nil {
			return err
		}
	}
	os.WriteFile("/proc/sys/net/ipv6/conf/"+h.Link+"/disable_ipv6", []byte("1"), 0)
	for _, a := range [][]string{
		{"addr", "add", h.DriverAddr + "/30", "dev", h.Link},
		{"link", "set", h.Link, "up"},
	} {
		if err := run("ip", a...); err != nil {
			return err
		}
	}
	if o.RateMbit > 0 {
		if err := run("tc", tbfArgs(h.Link, o.RateMbit)...); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		return fmt.Errorf("host %d: %w: %s", h.N, err, h.stderr)
	}
	var rd ready
	if err := h.receive(&rd, 3*time.Minute); err != nil {
		return fmt.Errorf("host %d did not start: %w", h.N, err)
	}
	if rd.Error != "" {
		return fmt.Errorf("host %d did not start: %s", h.N, rd.Error)
	}
	h.Port, h.ServerPort, h.User, h.Password, h.Database, h.Version = rd.Port, rd.ServerPort, rd.User, rd.Password, rd.Database, rd.Version
	h.MetricsURL, h.ServerPIDInside = rd.MetricsURL, rd.ServerPID
	h.AgentPID = childOf(h.InitPID)
	h.ready = true
	// The relay is the network's: PID 1 and the agent leave the cpuset,
	// the server and the exporter stay.
	for _, pid := range []int{h.InitPID, h.AgentPID} {
		if pid > 0 {
			os.WriteFile(filepath.Join(cpusetRoot, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		}
	}
	return nil
}

// receive reads the agent's next line into v, waiting at most d.
func (h *Host) receive(v any, d time.Duration) error {
	type line struct {
		b   []byte
		err error
	}
	ch := make(chan line, 1)
	go func() {
		b, err := h.stdout.ReadBytes('\n')
		ch <- line{b, err}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			return fmt.Errorf("%v: %s", l.err, h.stderr)
		}
		return json.Unmarshal(l.b, v)
	case <-time.After(d):
		// The reader ends when Close kills the namespace.
		return fmt.Errorf("no answer within %s: %s", d, h.stderr)
	}
}

// URL is the database's URL on the host's address, as a driver on
// another host would give it.
func (h *Host) URL() string {
	hp := net.JoinHostPort(h.Addr, strconv.Itoa(h.Port))
	if h.Engine == managed.MariaDB {
		return fmt.Sprintf("mysql://%s:%s@%s/%s", h.User, h.Password, hp, h.Database)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", h.User, hp, h.Database)
}

// Read takes a reading inside the host.
func (h *Host) Read() (Reading, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return Reading{}, errors.New("host closed")
	}
	if _, err := io.WriteString(h.stdin, "read\n"); err != nil {
		return Reading{}, err
	}
	var r Reading
	if err := h.receive(&r, 10*time.Second); err != nil {
		return r, err
	}
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// SetDelay changes the round trip the link adds (half each way), from
// the next chunk the relay reads on.
func (h *Host) SetDelay(roundTrip time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("host closed")
	}
	if _, err := fmt.Fprintf(h.stdin, "delay %d\n", int64(roundTrip/2)); err != nil {
		return err
	}
	var r Reading
	if err := h.receive(&r, 10*time.Second); err != nil {
		return err
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	h.Delay = roundTrip
	return nil
}

// Record reads the host every interval until stop, which returns the
// readings (one more taken when it is called).
func (h *Host) Record(every time.Duration) (stop func() (Readings, error)) {
	var rs Readings
	var firstErr error
	quit, done := make(chan struct{}), make(chan struct{})
	take := func() {
		r, err := h.Read()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			rs = append(rs, r)
		}
	}
	take()
	go func() {
		defer close(done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				take()
				return
			case <-tk.C:
				take()
			}
		}
	}()
	return func() (Readings, error) {
		close(quit)
		<-done
		return rs, firstErr
	}
}

// DriverLink reads the driver's end of the link (its namespace's
// counters: what the driver's side sent to the host and received).
func (h *Host) DriverLink() (NetCounters, error) {
	nets, err := readNetDev("/proc/net/dev")
	if err != nil {
		return NetCounters{}, err
	}
	c, ok := nets[h.Link]
	if !ok {
		return c, fmt.Errorf("no link %s here", h.Link)
	}
	return c, nil
}

// Log is what the host's processes wrote on stderr.
func (h *Host) Log() string { return h.stderr.String() }

// Close stops the host: the agent stops the exporter and the server
// inside; then the namespace's PID 1 ends (or is killed after a minute),
// and the link, the cpuset and a data directory Start made are removed.
// Calling it again does nothing.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	var errs []error
	if h.cmd != nil && h.cmd.Process != nil && !h.ready {
		// No agent yet, or one that failed: its PID 1 (ours) goes, and
		// the kernel takes the rest.
		h.cmd.Process.Kill()
		h.cmd.Wait()
	} else if h.cmd != nil && h.cmd.Process != nil {
		io.WriteString(h.stdin, "stop\n")
		h.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- h.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("host %d ended: %v: %s", h.N, err, h.stderr))
			}
		case <-time.After(time.Minute):
			h.cmd.Process.Kill() // the namespace's PID 1, ours: the kernel kills the rest
			<-done
			errs = append(errs, fmt.Errorf("host %d did not stop within a minute: killed: %s", h.N, h.stderr))
		}
	}
	unlock, err := lockState()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	if err := removeLeftovers(h.N); err != nil {
		errs = append(errs, err)
	}
	os.Remove(statePath(h.N))
	if h.tmpDir != "" {
		os.RemoveAll(h.tmpDir)
	}
	return errors.Join(errs...)
}

// removeLeftovers deletes host n's link and cpuset once its namespace is
// gone (the kernel deletes the pair with the namespace, a moment later).
func removeLeftovers(n int) error {
	var errs []error
	link := linkPrefix + strconv.Itoa(n)
	for end := time.Now().Add(5 * time.Second); linkExists(link) && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
	}
	if linkExists(link) {
		if err := run("ip", "link", "del", link); err != nil && linkExists(link) {
			errs = append(errs, err)
		}
	}
	dir := filepath.Join(cpusetRoot, cpusetPrefix+strconv.Itoa(n))
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			err = nil
			break
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("cpuset %s: %w (tasks: %s)", dir, err, readTrim(filepath.Join(dir, "cgroup.procs"))))
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool { _, err := net.InterfaceByName(name); return err == nil }

func readTrim(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }

// Cleanup removes the leftovers of hosts whose test process is gone
// (Start calls it): their namespaces, links and cpusets.
func Cleanup() error {
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	return cleanupLocked()
}

func cleanupLocked() error {
	var errs []error
	live := map[int]bool{}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		ns, ok := strings.CutSuffix(e.Name(), ".json")
		n, err := strconv.Atoi(ns)
		if !ok || err != nil {
			continue
		}
		var st state
		b, _ := os.ReadFile(filepath.Join(stateDir, e.Name()))
		json.Unmarshal(b, &st)
		if st.Owner > 0 && startTime(int(st.Owner)) == st.OwnerStart && st.OwnerStart != 0 {
			live[n] = true
			continue
		}
		// The owner is gone: its namespace's PID 1, if it is still the
		// process it started, is killed, and the kernel kills the rest.
		if st.Init > 0 && st.InitStart != 0 && startTime(int(st.Init)) == st.InitStart {
			syscall.Kill(int(st.Init), syscall.SIGKILL)
			for end := time.Now().Add(5 * time.Second); startTime(int(st.Init)) == st.InitStart && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			}
		}
		if err := removeLeftovers(n); err != nil {
			errs = append(errs, err)
		}
		if st.TmpDir != "" && strings.HasPrefix(filepath.Base(st.TmpDir), "dbparity-host-") {
			os.RemoveAll(st.TmpDir)
		}
		os.Remove(filepath.Join(stateDir, e.Name()))
	}
	// What no live host records: links and cpusets of a test killed
	// between making them and recording itself.
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		for _, p := range []string{linkPrefix, peerPrefix} {
			if ns, ok := strings.CutPrefix(i.Name, p); ok {
				if n, err := strconv.Atoi(ns); err == nil && !live[n] {
					run("ip", "link", "del", i.Name)
				}
			}
		}
	}
	dirs, _ := os.ReadDir(cpusetRoot)
	for _, d := range dirs {
		if ns, ok := strings.CutPrefix(d.Name(), cpusetPrefix); ok && d.IsDir() {
			if n, err := strconv.Atoi(ns); err == nil && !live[n] {
				if err := os.Remove(filepath.Join(cpusetRoot, d.Name())); err != nil {
					errs = append(errs, fmt.Errorf("stale cpuset %s: %w", d.Name(), err))
				}
			}
		}
	}
	if err := cleanupDriversLocked(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// lockState takes the state directory's lock: one process at a time
// numbers, starts or removes hosts.
func lockState() (unlock func(), err error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// startTime is a process's start time (/proc/PID/stat field 22), 0 when
// it does not run.
func startTime(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 20 || f[0] == "Z" {
		return 0
	}
	v, _ := strconv.ParseInt(f[19], 10, 64)
	return v
}

// childOf is a child of pid (the agent of PID 1), 0 when there is none.
func childOf(pid int) int {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			return c
		}
	}
	// Without CONFIG_PROC_CHILDREN: the parents of every process.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s := readTrim("/proc/" + e.Name() + "/stat")
		if end := strings.LastIndexByte(s, ')'); end > 0 {
			if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				return c
			}
		}
	}
	return 0
}

// Link is the delaying relay on loopback for a test: it forwards to
// target with oneWay added each way and stops when the test ends. It
// returns its address.
func Link(t testing.TB, target string, oneWay time.Duration) string {
	t.Helper()
	r, err := NewRelay("127.0.0.1:0", target, oneWay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.Addr()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
