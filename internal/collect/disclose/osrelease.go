package disclose

import (
	"io"
	"path/filepath"
	"strings"
)

// osName returns PRETTY_NAME from os-release. /etc/os-release wins over
// /usr/lib/os-release, as os-release(5) says, because an administrator
// may override the vendor's file.
func osName(o Options) string {
	for _, p := range []string{filepath.Join(o.EtcRoot, "os-release"), o.root("usr", "lib", "os-release")} {
		var name string
		found := false
		withFile(p, func(r io.Reader) {
			found = true
			name = parseOSRelease(r)["PRETTY_NAME"]
		})
		if found {
			return name
		}
	}
	return ""
}

// parseOSRelease reads os-release(5): shell-style KEY=value assignments
// with optional quotes, comments and blank lines. It does not expand
// variables; the format forbids them.
func parseOSRelease(r io.Reader) map[string]string {
	m := map[string]string{}
	eachLine(r, func(line string) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			return
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return
		}
		m[k] = unquoteShell(v)
	})
	return m
}

// unquoteShell undoes the quoting os-release allows: one pair of double or
// single quotes around the value, and backslash escapes of \ " $ ` inside
// double quotes or unquoted.
func unquoteShell(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\\\"$`", v[i+1]) >= 0 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
