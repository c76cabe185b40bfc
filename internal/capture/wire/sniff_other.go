//go:build !linux

package wire

import (
	"context"
	"errors"
)

// SniffStats says what a passive capture saw and what it lost.
type SniffStats struct{ Packets, KernelDrops, LostFlows int64 }

// Packets would read an interface's packets: Linux's AF_PACKET only.
type Packets struct{}

// ListenPackets needs Linux's AF_PACKET sockets.
func ListenPackets(string, int) (*Packets, error) {
	return nil, errors.New("--listen-on reads packets with Linux's AF_PACKET sockets: capture with --proxy here")
}

// Run is never reached.
func (*Packets) Run(context.Context, *Recorder) (SniffStats, error) { return SniffStats{}, nil }
