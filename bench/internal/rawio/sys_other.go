//go:build !linux

package rawio

import (
	"errors"
	"os"
)

// O_DIRECT is Linux's; elsewhere Measure falls back to buffered reads.
func openDirectFile(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

func fsType(dir string) string { return "" }

func freeBytes(dir string) (int64, bool) { return 0, false }
