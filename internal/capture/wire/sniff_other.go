//go:build !linux

package wire

import (
	"context"
	"errors"
)

// Packets would read an interface's packets: Linux's AF_PACKET only.
type Packets struct{}

var errNoPackets = errors.New("--listen-on reads packets with Linux's AF_PACKET sockets: capture with --proxy here")

// ListenPackets needs Linux's AF_PACKET sockets.
func ListenPackets(string, int) (*Packets, error) { return nil, errNoPackets }

// ListenPacketsRing needs Linux's AF_PACKET sockets.
func ListenPacketsRing(string, int, Ring) (*Packets, error) { return nil, errNoPackets }

// Run is never reached.
func (*Packets) Run(context.Context, *Recorder) (SniffStats, error) { return SniffStats{}, nil }
