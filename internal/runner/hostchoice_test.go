package runner

import (
	"context"

	"github.com/dbparity/dbparity/internal/collect/dbhost"
	"github.com/dbparity/dbparity/internal/engine"
	"github.com/dbparity/dbparity/internal/observe"
)

// hostChoice and chooseHost let the runner's tests ask observe how the
// database host of an opened target would be observed.
type hostChoice struct {
	src     dbhost.Source
	name    string
	local   bool
	warning string
}

func chooseHost(ctx context.Context, t *opened, o CollectOptions, pg engine.Conn, serverPID int) (hostChoice, error) {
	hc, err := observe.ChooseHost(ctx, t.observed(), o, pg, serverPID)
	return hostChoice{src: hc.Source, name: hc.Name, local: hc.Local, warning: hc.Warning}, fromObserve(err)
}
