package disclose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedLines adds each line of a fixture file as a seed, so fuzzing starts
// from real kernel output.
func seedLines(f *testing.F, path string) {
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f.Add(l)
	}
}

func FuzzParseMountLine(f *testing.F) {
	seedLines(f, "host1/proc/self/mountinfo")
	seedLines(f, "host2/proc/self/mountinfo")
	f.Add(`40 1 0:50 / /a\040b rw - tmpfs my\040src rw`)
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parseMountLine(line)
		if err != nil {
			return
		}
		if !strings.HasPrefix(m.point, "/") || m.major < 0 || m.minor < 0 || m.fsType == "" {
			t.Errorf("parseMountLine(%q) = %+v", line, m)
		}
		// Whatever parses must be usable for the prefix match.
		if got, ok := mountFor([]mount{m}, m.point); !ok || got != m {
			t.Errorf("mount %+v does not hold its own mount point", m)
		}
	})
}

func FuzzUnescapeOctal(f *testing.F) {
	for _, s := range []string{`a\040b`, `\134\134`, `\400`, `\`, `\0`, "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := unescapeOctal(s)
		if len(u) > len(s) {
			t.Errorf("unescapeOctal(%q) = %q grew", s, u)
		}
		if !strings.Contains(s, `\`) && u != s {
			t.Errorf("unescapeOctal(%q) = %q changed a string without escapes", s, u)
		}
	})
}

func FuzzBracketed(f *testing.F) {
	for _, p := range []string{"host1/sys/kernel/mm/transparent_hugepage/enabled", "host1/sys/kernel/mm/transparent_hugepage/defrag", "host1/sys/block/vda/queue/scheduler"} {
		seedLines(f, p)
	}
	f.Add("[]")
	f.Add("a [b")
	f.Fuzz(func(t *testing.T, s string) {
		v := bracketed(s)
		if strings.ContainsAny(v, "[] \t\n") {
			t.Errorf("bracketed(%q) = %q holds a bracket or space", s, v)
		}
		if v != "" && !strings.Contains(s, v) {
			t.Errorf("bracketed(%q) = %q is not in its input", s, v)
		}
	})
}

func FuzzParseCPUMax(f *testing.F) {
	for _, s := range []string{"150000 100000", "max 100000", "max", "0 1", "1 2 3", "-1 100000", " 9223372036854775807 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, p, err := parseCPUMax(s)
		if err != nil {
			return
		}
		if p <= 0 || q == 0 || q < -1 {
			t.Errorf("parseCPUMax(%q) = %d, %d accepted", s, q, p)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-1", "0-3,8,10-11", "", "5-2", "0-65535", "0-65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) > maxCPUs {
			t.Errorf("parseCPUList(%q): %d cpus", s, len(cpus))
		}
		for _, c := range cpus {
			if c < 0 || c >= maxCPUs {
				t.Errorf("parseCPUList(%q): cpu %d", s, c)
			}
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, p := range []string{"host1/proc/self/cgroup", "container1/proc/self/cgroup", "host2/proc/self/cgroup"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range parseProcCgroup(strings.NewReader(s)) {
			if !strings.HasPrefix(l.path, "/") || l.id < 0 {
				t.Errorf("parseProcCgroup(%q): line %+v", s, l)
			}
			containerMarkers(l.path)
		}
	})
}

// FuzzReaders feeds one input to the remaining parsers of foreign text;
// they only have to survive it.
func FuzzReaders(f *testing.F) {
	for _, p := range []string{"host1/proc/cpuinfo", "host1/proc/meminfo", "host1/etc/os-release", "container1/proc/cpuinfo"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		ci := parseCPUInfo(strings.NewReader(s))
		topology(ci.processors)
		for k, v := range parseMeminfo(strings.NewReader(s)) {
			if v < 0 {
				t.Errorf("meminfo %s = %d", k, v)
			}
		}
		parseOSRelease(strings.NewReader(s))
	})
}
