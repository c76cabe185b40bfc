package dbhost

import (
	"context"
	"net/http"
	"time"

	"github.com/dbparity/dbparity/internal/collect/disclose"
	"github.com/dbparity/dbparity/internal/collect/nodeexp"
	"github.com/dbparity/dbparity/internal/collect/ostat"
)

type nodeExporterSource struct{ s *nodeexp.Scraper }

// NewNodeExporter reads the database host from the node_exporter at url;
// timeout bounds each scrape beside the caller's context.
func NewNodeExporter(url string, timeout time.Duration) (Source, error) {
	s, err := nodeexp.New(url, &http.Client{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return nodeExporterSource{s}, nil
}

func (nodeExporterSource) Name() string                                        { return NodeExporter }
func (nodeExporterSource) Close() error                                        { return nil }
func (n nodeExporterSource) Read(ctx context.Context) (*ostat.Snapshot, error) { return n.s.Read(ctx) }

func (n nodeExporterSource) Disclose(ctx context.Context, dataDir string) (disclose.HostInfo, *disclose.StorageInfo) {
	return n.s.Disclose(ctx, dataDir)
}
