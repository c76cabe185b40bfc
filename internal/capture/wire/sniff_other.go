//go:build !linux

package wire

import (
	"context"
	"errors"
)

// SniffStats says what a passive capture saw and what it lost.
type SniffStats struct{ Packets, KernelDrops, LostFlows int64 }

// Sniff needs Linux's AF_PACKET sockets.
func Sniff(context.Context, string, int, *Recorder) (SniffStats, error) {
	return SniffStats{}, errors.New("--listen-on reads packets with Linux's AF_PACKET sockets: capture with --proxy here")
}
