package capture

import "testing"

func TestCopyFromStdin(t *testing.T) {
	for text, want := range map[string]string{
		"COPY copied(v) FROM STDIN":                  "copied",
		"copy public.t FROM stdin WITH (FORMAT csv)": "public.t",
		"/* c */ COPY t (a, b) FROM STDIN;":          "t",
		"COPY t TO STDOUT":                           "",
		"COPY t FROM '/tmp/x'":                       "",
		"SELECT 'COPY t FROM STDIN'":                 "",
	} {
		got, ok := CopyFromStdin(text)
		if got != want || ok != (want != "") {
			t.Errorf("CopyFromStdin(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
	if Unreplayable("COPY t FROM STDIN") != NoCopyData || Unreplayable(FastPath+`"lo_open" (OID 952)`) != NoFastPathArg ||
		Unreplayable("SELECT 1") != "" {
		t.Error("Unreplayable")
	}
}

func TestAdmin(t *testing.T) {
	for text, want := range map[string]string{
		"ALTER SYSTEM SET work_mem = '64MB'":                     "ALTER SYSTEM",
		"select pg_reload_conf()":                                "pg_reload_conf()",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity": "pg_terminate_backend()",
		"checkpoint":                           "CHECKPOINT",
		"-- admin\nDROP DATABASE scratch":      "DROP DATABASE",
		"COPY t TO PROGRAM 'gzip > /tmp/t.gz'": "COPY ... PROGRAM",
		"CREATE ROLE app LOGIN":                "CREATE ROLE",
		"SELECT my_pg_reload_conf_wrapper()":   "",
		"UPDATE t SET v = 1":                   "",
		"SELECT 'pg_reload_conf'":              "",
		"CREATE TABLE t (a int)":               "",
	} {
		if got := Admin(text); got != want {
			t.Errorf("Admin(%q) = %q, want %q", text, got, want)
		}
	}
}
