package collect

import (
	"strings"
	"testing"
)

func TestParseCPUModel(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\nprocessor\t: 1\nmodel name\t: other\n"
	if got := parseCPUModel(strings.NewReader(in)); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("got %q", got)
	}
	if got := parseCPUModel(strings.NewReader("processor : 0\n")); got != "" {
		t.Errorf("no model name: got %q", got)
	}
}

func TestParseMemTotal(t *testing.T) {
	in := "MemTotal:       24683656 kB\nMemFree:        23000000 kB\n"
	if got := parseMemTotal(strings.NewReader(in)); got != 24683656*1024 {
		t.Errorf("got %d", got)
	}
}

func TestHost(t *testing.T) {
	h := Host()
	if h.Cores < 1 || h.OS == "" {
		t.Errorf("host %+v", h)
	}
}
