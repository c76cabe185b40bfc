package compare

import "testing"

func TestHumanSetting(t *testing.T) {
	for in, want := range map[string]string{
		"16384 8kB [configuration file]":  "128MB [configuration file]",
		"4096 kB [command line]":          "4MB [command line]",
		"1536 kB [configuration file]":    "1536kB [configuration file]", // as postgresql.conf writes it
		"1024 MB":                         "1GB",
		"200 ms [configuration file]":     "200ms [configuration file]",
		"300 s [configuration file]":      "5min [configuration file]",
		"60 min":                          "1h",
		"-1 kB [configuration file]":      "-1 kB [configuration file]",
		"on [configuration file]":         "on [configuration file]",
		"(redacted) [configuration file]": "(redacted) [configuration file]",
	} {
		if got := HumanSetting(in); got != want {
			t.Errorf("HumanSetting(%q) = %q, want %q", in, got, want)
		}
	}
}
