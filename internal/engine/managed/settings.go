package managed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// setting is one name = value for the profile, value unquoted.
type setting struct{ name, value string }

var settingName = regexp.MustCompile(`^[a-z_][a-z0-9_.]*$`)

// reserved settings are dbparity's: the URL it hands out depends on them,
// and the managed server must never listen on the network.
var reserved = map[string]bool{
	"listen_addresses": true, "port": true, "unix_socket_directories": true,
	"data_directory": true, "config_file": true, "hba_file": true, "ident_file": true,
}

// ParseSetting splits and checks "name=value" as given to --pg-set.
// Setting names are case-insensitive in PostgreSQL, so the name is
// lower-cased. A value written as a postgresql.conf string literal
// ('...') is unquoted, so lines copied from a conf file work as well.
func ParseSetting(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", errors.New("want name=value, for example shared_buffers=1GB")
	}
	if name, err = checkName(name); err != nil {
		return "", "", err
	}
	value = strings.TrimSpace(value)
	if strings.HasPrefix(value, "'") {
		v, rest, err := unquote(value)
		if err != nil || strings.TrimSpace(rest) != "" {
			return "", "", fmt.Errorf("value %s is not one quoted string", value)
		}
		value = v
	}
	if strings.ContainsFunc(value, unicode.IsControl) {
		return "", "", errors.New("the value contains a control character (newline or tab)")
	}
	return name, value, nil
}

func checkName(name string) (string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	switch {
	case !settingName.MatchString(name):
		return "", fmt.Errorf("%q is not a setting name", name)
	case reserved[name]:
		return "", fmt.Errorf("%s is set by dbparity for a managed server (unix socket only, a free port)", name)
	case name == "include" || name == "include_if_exists" || name == "include_dir":
		return "", errors.New("include directives are not supported: put the settings themselves in the file")
	}
	return name, nil
}

// userSettings reads the preset, the conf file and then the --pg-set
// settings, in the order they are applied.
func userSettings(o Options) ([]setting, error) {
	var out []setting
	for _, s := range o.Preset {
		name, value, err := ParseSetting(s)
		if err != nil {
			return nil, fmt.Errorf("preset %s: %w", s, err)
		}
		out = append(out, setting{name, value})
	}
	if o.ConfFile != "" {
		b, err := os.ReadFile(o.ConfFile)
		if err != nil {
			return nil, fmt.Errorf("read --pg-conf: %w", err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			name, value, err := parseConfLine(line)
			if err != nil {
				return nil, fmt.Errorf("--pg-conf %s line %d: %w", o.ConfFile, n+1, err)
			}
			if name != "" {
				out = append(out, setting{name, value})
			}
		}
	}
	for _, s := range o.Settings {
		name, value, err := ParseSetting(s)
		if err != nil {
			return nil, fmt.Errorf("--pg-set %s: %w", s, err)
		}
		out = append(out, setting{name, value})
	}
	return out, nil
}

// parseConfLine reads one postgresql.conf line: name [=] value [# comment].
// Blank and comment lines give an empty name. Values are re-quoted when
// written, so a '#' or '=' inside a quoted value must survive parsing.
func parseConfLine(line string) (name, value string, err error) {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' {
		return "", "", nil
	}
	end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '=' || r == '#' })
	if end < 0 {
		end = len(s)
	}
	if name, err = checkName(s[:end]); err != nil {
		return "", "", err
	}
	s = strings.TrimSpace(s[end:])
	s = strings.TrimSpace(strings.TrimPrefix(s, "="))
	var rest string
	switch {
	case s == "" || s[0] == '#':
		return "", "", fmt.Errorf("%s has no value", name)
	case s[0] == '\'':
		if value, rest, err = unquote(s); err != nil {
			return "", "", fmt.Errorf("%s: %w", name, err)
		}
	default:
		end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '#' })
		if end < 0 {
			end = len(s)
		}
		value, rest = s[:end], s[end:]
	}
	if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
		return "", "", fmt.Errorf("%s: unexpected %q after the value", name, rest)
	}
	return name, value, nil
}

// unquote reads a postgresql.conf string literal at the start of s: a
// doubled quote stands for one, and a backslash escapes as in the server's
// own scanner.
func unquote(s string) (value, rest string, err error) {
	var b strings.Builder
	for k := 1; k < len(s); k++ {
		switch c := s[k]; {
		case c == '\'' && k+1 < len(s) && s[k+1] == '\'':
			b.WriteByte('\'')
			k++
		case c == '\'':
			return b.String(), s[k+1:], nil
		case c == '\\' && k+1 < len(s):
			n, width := unescape(s[k+1:])
			b.WriteByte(n)
			k += width
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("unterminated quoted string")
}

// unescape decodes the character(s) after a backslash.
func unescape(s string) (c byte, width int) {
	switch s[0] {
	case 'b':
		return '\b', 1
	case 'f':
		return '\f', 1
	case 'n':
		return '\n', 1
	case 'r':
		return '\r', 1
	case 't':
		return '\t', 1
	}
	for width < 3 && width < len(s) && s[width] >= '0' && s[width] <= '7' {
		c = c<<3 | (s[width] - '0')
		width++
	}
	if width > 0 {
		return c, width
	}
	return s[0], 1
}

// quote writes value as a postgresql.conf string literal. Backslashes are
// escapes inside it, so they are doubled along with quotes.
func quote(value string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(value) + "'"
}

// writeProfile writes dbparity.conf for this start: dbparity's profile, then
// the user's settings, so the user has the last word on everything but the
// reserved settings. The file is rewritten every start so that settings of
// an earlier start never linger.
func (i *Instance) writeProfile(wanted []setting) error {
	port, err := freePort(i.SocketDir)
	if err != nil {
		return err
	}
	i.Port = port
	listen := ""
	if i.Loopback {
		listen = "127.0.0.1"
	}
	all := []setting{
		{"listen_addresses", listen},
		{"unix_socket_directories", i.SocketDir},
		{"port", strconv.Itoa(port)},
		{"max_connections", "300"},
		// The IO profile's read and write times are measured, not zero.
		{"track_io_timing", "on"},
	}
	if i.hasStatStatements() {
		// The load profile's block changes and per-statement times.
		all = append(all, setting{"shared_preload_libraries", "pg_stat_statements"})
	}
	all = append(all, wanted...)
	i.Settings = make(map[string]string, len(all))
	var b strings.Builder
	b.WriteString("# written by dbparity on every start of the managed server; edits are lost\n")
	for _, s := range all {
		i.Settings[s.name] = s.value
		fmt.Fprintf(&b, "%s = %s\n", s.name, quote(s.value))
	}
	p := filepath.Join(i.DataDir, profileFile)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write settings profile: %w", err)
	}
	if err := i.own(p); err != nil {
		return fmt.Errorf("write settings profile: %w", err)
	}
	return nil
}

const profileFile = "dbparity.conf"

// hasStatStatements tells whether the server's binaries come with
// pg_stat_statements (the contrib modules, beside bin/ in lib/).
func (i *Instance) hasStatStatements() bool {
	for _, lib := range []string{filepath.Join(i.bin, "..", "lib"), filepath.Join(i.bin, "..", "lib", "postgresql")} {
		if _, err := os.Stat(filepath.Join(lib, "pg_stat_statements.so")); err == nil {
			return true
		}
	}
	return false
}

// freePort picks a loopback TCP port nobody listens on. The server listens
// on TCP only with Options.Loopback, but the port also names its socket
// file and keys its shared memory, so another server on the same number
// is what to avoid.
func freePort(socketDir string) (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		sock := filepath.Join(socketDir, ".s.PGSQL."+strconv.Itoa(port))
		if _, err := os.Lstat(sock); errors.Is(err, os.ErrNotExist) {
			return port, nil
		}
	}
	return 0, errors.New("find a free port: every port tried has a socket file in " + socketDir)
}

// UnknownSettings returns the names among settings (name=value, as
// --pg-set takes them) that the PostgreSQL server in binDir (found as
// Start finds it when "") does not know, as it lists them itself
// (postgres --describe-config): a misspelled name is refused before any
// server starts, not when one fails to. Names with a dot are an
// extension's and left to it.
func UnknownSettings(ctx context.Context, o Options, settings []string) ([]string, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	dir, _, err := Binaries(ctx, o)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--describe-config").Output()
	if err != nil {
		return nil, fmt.Errorf("list the server's settings (postgres --describe-config): %w", err)
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, ok := strings.Cut(line, "\t"); ok {
			known[strings.ToLower(name)] = true
		}
	}
	var unknown []string
	for _, s := range settings {
		name, _, err := ParseSetting(s)
		if err != nil || strings.Contains(name, ".") || known[name] {
			continue
		}
		unknown = append(unknown, name)
	}
	return unknown, nil
}
