package runner

import (
	"flag"
	"os"
	"testing"

	"github.com/dbparity/dbparity/internal/testpar"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testpar.Default(6)
	os.Exit(m.Run())
}
