package testhost

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MariaDB host's user, made on its socket
	"golang.org/x/sys/unix"

	"github.com/dbparity/dbparity/internal/engine/managed"
)

// The process that holds a host's namespaces is the test binary itself,
// started again with these variables: the role ("init", then "agent")
// and the host's config. This package's init function looks for them
// before any test or TestMain runs, so every test binary that imports the
// package can be a host.
const (
	envRole   = "DBPARITY_TESTHOST_ROLE"
	envConfig = "DBPARITY_TESTHOST_CONFIG"
)

// config is what the parent tells a host's processes.
type config struct {
	N            int
	Hostname     string
	Addr         string // the host's address (198.18.N.2)
	Peer         string // the host's end of the veth pair, as created (dbpHN)
	Engine       managed.Engine
	DataDir      string
	Settings     []string
	OneWay       time.Duration
	RateMbit     float64
	NodeExporter string // the exporter's binary, "" for none
}

// ready is the agent's first line on stdout.
type ready struct {
	Error       string `json:"error,omitempty"`
	Port        int    `json:"port"`        // the relay's, on Addr
	ServerPort  int    `json:"server_port"` // the server's, on the host's loopback
	User        string `json:"user"`
	Password    string `json:"password,omitempty"`
	Database    string `json:"database"`
	Version     string `json:"version"`
	ServerPID   int    `json:"server_pid"` // the PID namespace's number: never to be signalled from outside
	MetricsURL  string `json:"metrics_url,omitempty"`
	ExporterPID int    `json:"exporter_pid,omitempty"` // the namespace's number
}

func init() {
	switch os.Getenv(envRole) {
	case "init":
		os.Exit(runInit())
	case "agent":
		os.Exit(runAgent())
	}
}

func readConfig() (config, error) {
	var c config
	err := json.Unmarshal([]byte(os.Getenv(envConfig)), &c)
	return c, err
}

// runInit is the first process of the host's PID namespace (its PID 1).
// It gives the mount namespace a /proc of its own (the namespace's
// processes, its network's files), sets the host name, waits for the
// parent's "go" (the parent first puts it in the host's cpuset and its
// end of the veth pair in its network namespace), then starts the agent
// and reaps every process the namespace orphans until the agent ends,
// whose exit status it returns. When it ends, the kernel kills whatever
// is left in the namespace.
func runInit() int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "testhost init: "+format+"\n", a...)
		return 1
	}
	c, err := readConfig()
	if err != nil {
		return fail("config: %v", err)
	}
	if err := enterNamespaces(c.Hostname); err != nil {
		return fail("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	env := []string{envRole + "=agent"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envRole+"=") {
			env = append(env, kv)
		}
	}
	agent, err := os.StartProcess(exe, []string{exe}, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return fail("start the agent: %v", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			agent.Signal(s)
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail("wait: %v", err)
		}
		if pid == agent.Pid {
			if ws.Exited() {
				return ws.ExitStatus()
			}
			return 128 + int(ws.Signal())
		}
	}
}

// runAgent sets the host up inside its namespaces and serves the parent
// on stdin and stdout (one JSON line each way): "read" gives a Reading,
// "delay NS" sets the relay's one way; "stop", the end of stdin or
// SIGTERM stops what it started, by the PIDs its namespace sees, and
// ends it.
func runAgent() int {
	out := json.NewEncoder(os.Stdout)
	c, err := readConfig()
	if err != nil {
		out.Encode(ready{Error: "config: " + err.Error()})
		return 1
	}
	// What the agent starts is no host's process.
	os.Unsetenv(envRole)
	os.Unsetenv(envConfig)
	h := &agent{c: c}
	rd, err := h.start()
	if err != nil {
		h.stop()
		out.Encode(ready{Error: err.Error()})
		return 1
	}
	out.Encode(rd)
	cmds := make(chan string)
	go func() {
		defer close(cmds)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
loop:
	for {
		select {
		case <-sigs:
			break loop
		case cmd, ok := <-cmds:
			if !ok || cmd == "stop" {
				break loop
			}
			switch verb, arg, _ := strings.Cut(cmd, " "); verb {
			case "read":
				r, err := h.read()
				if err != nil {
					r.Error = err.Error()
				}
				out.Encode(r)
			case "delay": // the one way, in ns
				ns, err := strconv.ParseInt(arg, 10, 64)
				r := Reading{At: time.Now()}
				if err != nil || ns < 0 {
					r.Error = fmt.Sprintf("delay %q", arg)
				} else {
					h.relay.SetOneWay(time.Duration(ns))
				}
				out.Encode(r)
			default:
				out.Encode(Reading{Error: fmt.Sprintf("unknown command %q", cmd)})
			}
		}
	}
	if err := h.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testhost agent: stop: %v\n", err)
		return 1
	}
	return 0
}

type agent struct {
	c        config
	inst     *managed.Instance
	relay    *Relay
	exporter *exec.Cmd
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// start brings the network up, then the server, the exporter and the
// relay in front of the server.
func (h *agent) start() (ready, error) {
	c := h.c
	// No IPv6 on the link: its neighbour discovery would be traffic
	// neither side sent.
	for _, f := range []string{"all", "default"} {
		os.WriteFile("/proc/sys/net/ipv6/conf/"+f+"/disable_ipv6", []byte("1"), 0)
	}
	for _, a := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", c.Peer, "name", "eth0"},
		{"addr", "add", c.Addr + "/30", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
	} {
		if err := run("ip", a...); err != nil {
			return ready{}, err
		}
	}
	if c.RateMbit > 0 {
		if err := run("tc", tbfArgs("eth0", c.RateMbit)...); err != nil {
			return ready{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := managed.Options{DataDir: c.DataDir, Loopback: true, Settings: c.Settings}
	var err error
	rd := ready{}
	port := 5432
	if c.Engine == managed.MariaDB {
		port = 3306
		if h.inst, err = managed.StartMariaDB(ctx, o); err != nil {
			return rd, err
		}
		rd.User, rd.Password = mariaUser, mariaPassword
		if err := h.mariaUser(ctx); err != nil {
			return rd, err
		}
	} else {
		if h.inst, err = managed.Start(ctx, o); err != nil {
			return rd, err
		}
		rd.User = h.inst.User
	}
	rd.Database, rd.Version, rd.ServerPID, rd.ServerPort = h.inst.Database, h.inst.Version, h.inst.PID, h.inst.Port
	if c.NodeExporter != "" {
		addr := net.JoinHostPort(c.Addr, "9100")
		h.exporter = exec.Command(c.NodeExporter, "--web.listen-address="+addr)
		h.exporter.Stderr = io.Discard
		if err := h.exporter.Start(); err != nil {
			return rd, fmt.Errorf("node_exporter: %w", err)
		}
		rd.MetricsURL, rd.ExporterPID = "http://"+addr+"/metrics", h.exporter.Process.Pid
		if err := awaitHTTP(rd.MetricsURL, 10*time.Second); err != nil {
			return rd, fmt.Errorf("node_exporter: %w", err)
		}
	}
	if h.relay, err = NewRelay(net.JoinHostPort(c.Addr, strconv.Itoa(port)), net.JoinHostPort("127.0.0.1", strconv.Itoa(h.inst.Port)), c.OneWay); err != nil {
		return rd, fmt.Errorf("relay: %w", err)
	}
	rd.Port = port
	return rd, nil
}

// The MariaDB host's user on the relay's side of the server (the relay
// connects from the host's loopback).
const mariaUser, mariaPassword = "bench", "bench"

func (h *agent) mariaUser(ctx context.Context) error {
	u, err := url.Parse(h.inst.URL())
	if err != nil {
		return err
	}
	admin, err := sql.Open("mysql", h.inst.User+"@unix("+u.Query().Get("socket")+")/")
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, s := range []string{
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY '%s'", mariaUser, mariaPassword),
		fmt.Sprintf("GRANT ALL ON *.* TO '%s'@'127.0.0.1' WITH GRANT OPTION", mariaUser),
	} {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func awaitHTTP(url string, d time.Duration) error {
	var err error
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		var resp *http.Response
		if resp, err = http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
	}
	return fmt.Errorf("no answer on %s within %s: %v", url, d, err)
}

// stop stops what start started, inside the namespace: the exporter and
// the server by the PIDs this namespace gives them.
func (h *agent) stop() error {
	var errs []error
	if h.relay != nil {
		h.relay.Close()
	}
	if h.exporter != nil && h.exporter.Process != nil {
		h.exporter.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { h.exporter.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			h.exporter.Process.Kill()
			<-done
		}
	}
	if h.inst != nil {
		if err := h.inst.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read takes a Reading of the host from inside: its /proc.
func (h *agent) read() (Reading, error) {
	r := Reading{At: time.Now()}
	r.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var err error
	if r.Nets, err = readNetDev("/proc/net/dev"); err != nil {
		return r, err
	}
	if r.ContextSwitches, err = readCtxt("/proc/stat"); err != nil {
		return r, err
	}
	comm := "postgres"
	if h.c.Engine == managed.MariaDB {
		comm = "mariadbd"
	}
	r.ServerCPUS, r.ServerProcs = serverCPU("/proc", comm)
	if h.inst != nil {
		r.ServerCPUsAllowed = statusField(filepath.Join("/proc", strconv.Itoa(h.inst.PID), "status"), "Cpus_allowed_list")
	}
	if h.relay != nil {
		r.RelayUp, r.RelayDown = h.relay.Bytes()
	}
	return r, nil
}

func tbfArgs(dev string, mbit float64) []string {
	// A burst of 10 ms at the rate (at least 32 KB), a queue of 50 ms.
	burst := max(int(mbit*1e6/8/100), 32<<10)
	return []string{"qdisc", "replace", "dev", dev, "root", "tbf", "rate", fmt.Sprintf("%.0fkbit", mbit*1000),
		"burst", strconv.Itoa(burst), "latency", "50ms"}
}

// enterNamespaces is the start of a PID 1 of a host's namespaces: it
// makes the mount namespace's mounts private, mounts its own /proc, sets
// the host name, and waits for the parent's "go" line (its end of the
// veth pair is then in the network namespace). It reads stdin one byte
// at a time: what follows the line is not its to read.
func enterNamespaces(hostname string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	var line []byte
	for {
		var b [1]byte
		n, err := os.Stdin.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err != nil {
			return fmt.Errorf("no go from the parent: %w", err)
		}
	}
	if string(line) != "go" {
		return fmt.Errorf("the parent said %q", line)
	}
	return nil
}
