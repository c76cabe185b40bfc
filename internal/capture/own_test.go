package capture_test

import (
	"testing"

	"github.com/dbparity/dbparity/internal/capture"
	"github.com/dbparity/dbparity/internal/engine"
)

// The marker dbparity's own MySQL connections send is the one a capture
// recognises.
func TestOwnMarker(t *testing.T) {
	app, ok := capture.OwnMarker(engine.OwnMarkerSQL("dbparity-collector"))
	if !ok || app != "dbparity-collector" || !capture.Own(app) {
		t.Errorf("marker read as %q, %v", app, ok)
	}
	if _, ok := capture.OwnMarker("SET @dbparity_application = 'x'; DROP TABLE t"); ok {
		t.Error("a marker with more after it was taken")
	}
	if capture.Own("dbparity") {
		t.Error("the workload's own sessions (application dbparity) are an application to capture")
	}
}
