package capture

import (
	"strings"
	"testing"
)

func TestDDL(t *testing.T) {
	for text, want := range map[string]bool{
		"CREATE TABLE t (id int)":                   true,
		"create schema `appdb`":                     true,
		"ALTER TABLE t ADD COLUMN c int":            true,
		"/* app */ DROP INDEX i":                    true,
		"TRUNCATE t":                                true,
		"RENAME TABLE a TO b":                       true,
		"COMMENT ON TABLE t IS 'x'":                 true,
		"CREATE TEMPORARY TABLE tmp (id int)":       false,
		"CREATE TEMP TABLE tmp (id int)":            false,
		"DROP TEMPORARY TABLE IF EXISTS tmp":        false,
		"CREATE OR REPLACE TEMP VIEW v AS SELECT 1": false,
		"INSERT INTO t VALUES (1)":                  false,
		"SELECT 'CREATE TABLE t'":                   false,
	} {
		if got := DDL(text); got != want {
			t.Errorf("DDL(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestDatabase(t *testing.T) {
	for _, c := range []struct {
		text       string
		mysql      bool
		verb, name string
	}{
		{"CREATE SCHEMA `appdb`", true, "CREATE", "appdb"},
		{"create database if not exists AppDB character set utf8mb4", true, "CREATE", "AppDB"},
		{"DROP SCHEMA IF EXISTS `a``b`", true, "DROP", "a`b"},
		{"USE `appdb`", true, "USE", "appdb"},
		{"CREATE DATABASE AppDB", false, "CREATE", "appdb"},
		{`CREATE DATABASE "AppDB" TEMPLATE template0`, false, "CREATE", "AppDB"},
		{"CREATE SCHEMA app", false, "", ""}, // a schema in a database
		{"USE app", false, "", ""},
		{"CREATE TABLE appdb.t (id int)", true, "", ""},
		{"CREATE DATABASE IF EXISTS x", true, "", ""},
		{"SELECT 1", true, "", ""},
	} {
		verb, name, at, end := Database(c.text, c.mysql)
		if verb != c.verb || name != c.name {
			t.Errorf("Database(%q, mysql %v) = %q %q, want %q %q", c.text, c.mysql, verb, name, c.verb, c.name)
		}
		if name != "" && (at <= 0 || end <= at || end > len(c.text)) {
			t.Errorf("Database(%q): name at %d-%d", c.text, at, end)
		}
	}
}

// A capture from MySQL's logs says its errors are unknown, in the file
// too; one from the wire knows them; an older MySQL capture without the
// key is read as not knowing them.
func TestErrorsUnknown(t *testing.T) {
	path := t.TempDir() + "/c.capture"
	c := &Capture{Format: Format, Engine: EngineMySQL, Sources: []string{"general.log"}, ErrorsUnknown: true,
		Texts: []string{"SELECT 1"}, Sessions: []Session{{ID: "thread-1", Statements: []Statement{{Text: 0}}}}}
	if err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ErrorsUnknown || got.ErrorsKnown() {
		t.Errorf("read back: errors unknown %v, known %v", got.ErrorsUnknown, got.ErrorsKnown())
	}
	old := &Capture{Engine: EngineMySQL, Sources: []string{"general.log"}}
	wire := &Capture{Engine: EngineMySQL, Sources: []string{WirePrefix + "proxy"}}
	pg := &Capture{Engine: EnginePostgres, Sources: []string{"postgresql.csv"}}
	if old.ErrorsKnown() || !wire.ErrorsKnown() || !pg.ErrorsKnown() {
		t.Errorf("errors known: older MySQL log capture %v, wire %v, PostgreSQL %v", old.ErrorsKnown(), wire.ErrorsKnown(), pg.ErrorsKnown())
	}
	if s := got.Summary(); !strings.Contains(s, "errors: not in the log") {
		t.Errorf("summary:\n%s", s)
	}
}
