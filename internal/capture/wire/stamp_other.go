//go:build !linux

package wire

import (
	"io"
	"net"
	"time"
)

func stampFrom(net.Listener) {}

// stampedReader reads src with the time of each read: the kernel's
// receive timestamps are read on Linux only.
func stampedReader(src io.Reader) func(buf []byte) (int, time.Time, error) {
	return func(buf []byte) (int, time.Time, error) {
		n, err := src.Read(buf)
		return n, time.Now(), err
	}
}
