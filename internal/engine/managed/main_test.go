package managed

import (
	"flag"
	"os"
	"testing"

	"github.com/dbparity/dbparity/internal/testpar"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testpar.Default(4)
	os.Exit(m.Run())
}
