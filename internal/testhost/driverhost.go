package testhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A driver host is the other side of a test host: a driver process of
// its own, for a run split over several driver hosts (run --part I/N).
// Driver host M is:
//
//   - the veth pair dbpCM (the driver's namespace's end, 198.19.M.1/30)
//     and eth0 inside (created as dbpKM, 198.19.M.2/30), IPv6 off;
//   - network, PID, mount and UTS namespaces held by a process started
//     from the running binary (this package's init function recognises
//     its role), as a test host's are: PID 1 mounts the namespace's
//     /proc, sets the host name dbpdriver-M, brings the link up with a
//     route to 198.18.0.0/16 (the test hosts) through the driver's
//     namespace and reaps what the namespace orphans until it is told to
//     stop, when the kernel kills whatever is left in it;
//   - forwarding between the links in the driver's namespace, switched
//     on for this pair's end and for the ends of the test hosts it must
//     reach (per interface: net.ipv4.conf.LINK.forwarding, which goes
//     with the link; the machine's other interfaces do not forward), and
//     a route back to 198.19.0.0/16 inside each of those hosts.
//
// Commands run in it through Command. No cpuset: it shares the driver's
// CPUs. Close stops it; a driver host whose owner died is removed by the
// next Start, StartHost, StartDriverHost or Cleanup, as a test host is.

// DriverHost is a running driver host.
type DriverHost struct {
	M        int
	Hostname string // dbpdriver-M
	Addr     string // its address, 198.19.M.2
	Gateway  string // the driver's namespace's end, 198.19.M.1
	Link     string // the driver's namespace's end's name, dbpCM
	InitPID  int    // its namespace's PID 1 as this process sees it
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *lockedBuffer
	closed   bool
}

const (
	driverLinkPrefix = "dbpC"
	driverPeerPrefix = "dbpK"
	roleDriver       = "driver"
)

// driverConfig is what the parent tells a driver host's PID 1.
type driverConfig struct {
	M                  int
	Hostname, Addr     string
	Gateway, Peer, Net string // Net: the route's destination, the test hosts'
}

func init() {
	if os.Getenv(envRole) == roleDriver {
		os.Exit(runDriverInit())
	}
}

func driverStatePath(m int) string {
	return filepath.Join(stateDir, "driver-"+strconv.Itoa(m)+".json")
}

// StartDriver starts a driver host that reaches hosts and stops it when
// the test ends. The test is skipped when it cannot run here
// (Unavailable), and fails instead under CI=true.
func StartDriver(t testing.TB, hosts ...*Host) *DriverHost {
	t.Helper()
	if why := driverUnavailable(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	d, err := StartDriverHost(hosts...)
	if d != nil {
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("driver host %d: %v", d.M, err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func driverUnavailable() string {
	switch {
	case os.Geteuid() != 0:
		return "a driver host needs root (namespaces, veth)"
	case !have("ip"):
		return "a driver host needs ip (iproute2)"
	case !have("nsenter"):
		return "a driver host needs nsenter (util-linux)"
	case !exists("/proc/self/ns/net") || !exists("/proc/self/ns/pid"):
		return "a driver host needs network and PID namespaces"
	}
	return ""
}

// StartDriverHost is StartDriver for a benchmark: the caller must Close
// the driver host, also when StartDriverHost fails and returns one. The
// hosts given are those the driver host must reach (more can be added
// with Reach).
func StartDriverHost(hosts ...*Host) (*DriverHost, error) {
	if why := driverUnavailable(); why != "" {
		return nil, errors.New(why)
	}
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	cleanupLocked()
	m := 1
	for ; m <= maxHosts && exists(driverStatePath(m)); m++ {
	}
	if m > maxHosts {
		unlock()
		return nil, fmt.Errorf("%d driver hosts already run", maxHosts)
	}
	d := &DriverHost{M: m, Hostname: "dbpdriver-" + strconv.Itoa(m), Addr: fmt.Sprintf("198.19.%d.2", m),
		Gateway: fmt.Sprintf("198.19.%d.1", m), Link: driverLinkPrefix + strconv.Itoa(m), stderr: &lockedBuffer{}}
	err = d.start()
	unlock()
	if err != nil {
		return d, fmt.Errorf("driver host %d: %w", m, err)
	}
	if err := d.Reach(hosts...); err != nil {
		return d, err
	}
	return d, nil
}

func (d *DriverHost) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := driverConfig{M: d.M, Hostname: d.Hostname, Addr: d.Addr, Gateway: d.Gateway,
		Peer: driverPeerPrefix + strconv.Itoa(d.M), Net: "198.18.0.0/16"}
	b, _ := json.Marshal(cfg)
	d.cmd = exec.Command(exe)
	d.cmd.Env = append(os.Environ(), envRole+"="+roleDriver, envConfig+"="+string(b))
	d.cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Pdeathsig:  syscall.SIGKILL,
	}
	d.cmd.Stderr = d.stderr
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("start the driver host's namespaces: %w", err)
	}
	d.InitPID = d.cmd.Process.Pid
	st := state{Owner: int64(os.Getpid()), OwnerStart: startTime(os.Getpid()), Init: int64(d.InitPID), InitStart: startTime(d.InitPID)}
	sb, _ := json.Marshal(st)
	if err := os.WriteFile(driverStatePath(d.M), sb, 0o644); err != nil {
		return err
	}
	for _, a := range [][]string{
		{"link", "add", d.Link, "type", "veth", "peer", "name", cfg.Peer},
		{"link", "set", cfg.Peer, "netns", strconv.Itoa(d.InitPID)},
	} {
		if err := run("ip", a...); err != nil {
			return err
		}
	}
	os.WriteFile("/proc/sys/net/ipv6/conf/"+d.Link+"/disable_ipv6", []byte("1"), 0)
	for _, a := range [][]string{
		{"addr", "add", d.Gateway + "/30", "dev", d.Link},
		{"link", "set", d.Link, "up"},
	} {
		if err := run("ip", a...); err != nil {
			return err
		}
	}
	if err := setForwarding(d.Link); err != nil {
		return err
	}
	if _, err := io.WriteString(d.stdin, "go\n"); err != nil {
		return fmt.Errorf("%w: %s", err, d.stderr)
	}
	line := make(chan string, 1)
	go func() {
		var b []byte
		var c [1]byte
		for {
			n, err := out.Read(c[:])
			if n == 1 && c[0] != '\n' {
				b = append(b, c[0])
			}
			if err != nil || (n == 1 && c[0] == '\n') {
				line <- string(b)
				io.Copy(io.Discard, out)
				return
			}
		}
	}()
	select {
	case l := <-line:
		if l != "ready" {
			return fmt.Errorf("did not start: %q: %s", l, d.stderr)
		}
	case <-time.After(time.Minute):
		return fmt.Errorf("did not start within a minute: %s", d.stderr)
	}
	return nil
}

// setForwarding lets packets that come in on link be forwarded (IPv4,
// this interface only).
func setForwarding(link string) error {
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+link+"/forwarding", []byte("1"), 0); err != nil {
		return fmt.Errorf("forwarding on %s: %w", link, err)
	}
	return nil
}

// Reach lets the driver host reach hosts: their links in the driver's
// namespace forward, and each host routes 198.19.0.0/16 (the driver
// hosts) back through it.
func (d *DriverHost) Reach(hosts ...*Host) error {
	for _, h := range hosts {
		if err := setForwarding(h.Link); err != nil {
			return err
		}
		c := exec.Command("nsenter", "--target", strconv.Itoa(h.InitPID), "--net",
			"ip", "route", "replace", "198.19.0.0/16", "via", h.DriverAddr, "dev", "eth0")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("host %d: route to the driver hosts: %v: %s", h.N, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Command is a command to run on the driver host: in its network, PID,
// mount and UTS namespaces (nsenter), in directory dir ("" for this
// process's working directory; the mount namespace has this machine's
// files). It ends with the driver host at the latest.
func (d *DriverHost) Command(dir, name string, arg ...string) *exec.Cmd {
	return nsenterCommand(d.InitPID, dir, name, arg...)
}

// Command is a command to run on the host, as one of its own processes
// would run: in its network, PID, mount and UTS namespaces (nsenter), in
// directory dir ("" for this process's working directory; the mount
// namespace has this machine's files), but not in its cpuset: it uses
// the driver's CPUs (taskset can put it on the host's). It ends with the
// host at the latest. The process started is nsenter, whose child the
// command is: a signal meant for the command (SIGINT to end a capture)
// goes to that child, since nsenter dies of it without passing it on.
func (h *Host) Command(dir, name string, arg ...string) *exec.Cmd {
	return nsenterCommand(h.InitPID, dir, name, arg...)
}

func nsenterCommand(pid int, dir, name string, arg ...string) *exec.Cmd {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	args := append([]string{"--target", strconv.Itoa(pid), "--net", "--pid", "--mount", "--uts", "--wd=" + dir, "--", name}, arg...)
	c := exec.Command("nsenter", args...)
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// Close stops the driver host: its PID 1 ends, and the kernel kills
// what is left in its namespaces and deletes the link with them. Calling
// it again does nothing.
func (d *DriverHost) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if d.cmd != nil && d.cmd.Process != nil {
		d.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- d.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("driver host %d ended: %v: %s", d.M, err, d.stderr))
			}
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("driver host %d did not stop within 10 s: killed: %s", d.M, d.stderr))
		}
	}
	unlock, err := lockState()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	if err := removeDriverLink(d.M); err != nil {
		errs = append(errs, err)
	}
	os.Remove(driverStatePath(d.M))
	return errors.Join(errs...)
}

// removeDriverLink deletes driver host m's link once its namespace is
// gone (the kernel deletes the pair with it, a moment later).
func removeDriverLink(m int) error {
	link := driverLinkPrefix + strconv.Itoa(m)
	for end := time.Now().Add(5 * time.Second); linkExists(link) && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
	}
	if linkExists(link) {
		if err := run("ip", "link", "del", link); err != nil && linkExists(link) {
			return err
		}
	}
	return nil
}

// cleanupDriversLocked removes the driver hosts whose owner is gone, and
// any dbpC*/dbpK* link no live driver host records.
func cleanupDriversLocked() error {
	var errs []error
	live := map[int]bool{}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		ms, ok := strings.CutPrefix(e.Name(), "driver-")
		if !ok {
			continue
		}
		ms, ok = strings.CutSuffix(ms, ".json")
		m, err := strconv.Atoi(ms)
		if !ok || err != nil {
			continue
		}
		var st state
		b, _ := os.ReadFile(filepath.Join(stateDir, e.Name()))
		json.Unmarshal(b, &st)
		if st.Owner > 0 && st.OwnerStart != 0 && startTime(int(st.Owner)) == st.OwnerStart {
			live[m] = true
			continue
		}
		if st.Init > 0 && st.InitStart != 0 && startTime(int(st.Init)) == st.InitStart {
			syscall.Kill(int(st.Init), syscall.SIGKILL)
			for end := time.Now().Add(5 * time.Second); startTime(int(st.Init)) == st.InitStart && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			}
		}
		if err := removeDriverLink(m); err != nil {
			errs = append(errs, err)
		}
		os.Remove(filepath.Join(stateDir, e.Name()))
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		for _, p := range []string{driverLinkPrefix, driverPeerPrefix} {
			if ms, ok := strings.CutPrefix(i.Name, p); ok {
				if m, err := strconv.Atoi(ms); err == nil && !live[m] {
					run("ip", "link", "del", i.Name)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// runDriverInit is a driver host's PID 1: it gives the mount namespace
// its own /proc, sets the host name, waits for the parent's "go" (its
// end of the veth pair is then in the namespace), brings the link up
// with the route to the test hosts, says "ready", and reaps orphans
// until its stdin ends.
func runDriverInit() int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "testhost driver init: "+format+"\n", a...)
		fmt.Println("failed")
		return 1
	}
	var c driverConfig
	if err := json.Unmarshal([]byte(os.Getenv(envConfig)), &c); err != nil {
		return fail("config: %v", err)
	}
	os.Unsetenv(envRole)
	os.Unsetenv(envConfig)
	if err := enterNamespaces(c.Hostname); err != nil {
		return fail("%v", err)
	}
	for _, f := range []string{"all", "default"} {
		os.WriteFile("/proc/sys/net/ipv6/conf/"+f+"/disable_ipv6", []byte("1"), 0)
	}
	for _, a := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", c.Peer, "name", "eth0"},
		{"addr", "add", c.Addr + "/30", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", c.Net, "via", c.Gateway, "dev", "eth0"},
	} {
		if err := run("ip", a...); err != nil {
			return fail("%v", err)
		}
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD)
	reap := func() {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if pid <= 0 || err != nil {
				return
			}
		}
	}
	for {
		select {
		case <-done:
			return 0
		case <-sigs:
			reap()
		case <-time.After(time.Second):
			reap()
		}
	}
}
