package replay

import (
	"context"
	"testing"

	"github.com/dbparity/dbparity/internal/capture"
)

// A wire capture's declared types are what the statements are bound with:
// the server is not asked to infer them. An all-zero declaration (the
// client let the server infer, as libpq does) is inferred as from logs.
func TestTypeDeclared(t *testing.T) {
	v := func(s string) *string { return &s }
	c := &capture.Capture{Texts: []string{"UPDATE t SET a = $1 WHERE id = $2", "SELECT $1 * $2"},
		Sessions: []capture.Session{{Statements: []capture.Statement{
			{Text: 0, Extended: true, Params: []*string{v("x"), v("7")}, Types: []uint32{25, 20}},
			{Text: 1, Extended: true, Params: []*string{v("2"), v("3")}, Types: []uint32{0, 0}},
		}}}}
	var asked []string
	describe := func(_ context.Context, _, _, text string, types []uint32) ([]uint32, error) {
		asked = append(asked, text)
		return []uint32{20, 20}, nil
	}
	types, _ := Type(context.Background(), c, describe)
	if got := types[0]; len(got) != 2 || got[0] != 25 || got[1] != 20 {
		t.Errorf("declared types %v, want [25 20]", got)
	}
	for _, a := range asked {
		if a == c.Texts[0] {
			t.Errorf("the server was asked to infer a statement whose types the client declared")
		}
	}
	if len(asked) == 0 || asked[0] != c.Texts[1] {
		t.Errorf("the undeclared statement was not inferred: asked %q", asked)
	}
}
