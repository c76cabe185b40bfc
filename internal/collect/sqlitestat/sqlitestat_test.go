package sqlitestat

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dbparity/dbparity/internal/engine"
)

func TestDescribe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	tg, err := engine.Open("sqlite://" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Exec(context.Background(), "CREATE TABLE t (x int)")
	d, err := Describe(context.Background(), c, path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version == "" || d.Settings["journal_mode"] != "wal" || d.BlockSize != 4096 || d.BufferCacheBytes != 2000*1024 || d.DataBytes <= 0 {
		t.Errorf("disclosure %+v", d)
	}
}

func TestLoadProfile(t *testing.T) {
	p := LoadProfile("3.50", map[string]float64{"sqlite.cache_hit": 900, "sqlite.cache_miss": 100, "sqlite.cache_write": 50},
		10, 20, 2, 400, 1.5)
	want := map[string]float64{"Logical reads": 1000, "Physical reads": 100, "Physical writes": 50, "Transactions": 20, "DB CPU": 1.5}
	for name, total := range want {
		l := p.Line(name)
		if l == nil || l.Total == nil || *l.Total != total || *l.PerSecond != total/10 || *l.PerTx != total/20 {
			t.Errorf("%s: %+v, want total %v", name, l, total)
		}
	}
	if l := p.Line("DB time"); l.Total != nil || l.Source != "not available" {
		t.Errorf("DB time %+v: SQLite has none", l)
	}
}
