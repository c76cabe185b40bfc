package wire

import (
	"fmt"
	"os"
)

// Ring sizes the memory-mapped ring (TPACKET_V3) the kernel writes the
// captured packets into: Blocks blocks of BlockSize bytes each. The
// kernel fills a block, hands it to the reader, and drops what arrives
// while every block is still the reader's; a block is handed over when
// full or after ringRetire. The zero value is the default.
type Ring struct {
	BlockSize int // bytes: a multiple of the page size, at least MinRingBlockSize
	Blocks    int // at least 2
}

const (
	// DefaultRingBlockSize and DefaultRingBlocks make a ring of 32 MiB,
	// what the old reader's socket buffer held: at least 1.6 s of a
	// stalled reader at low rates (a block a ringRetire), 32 MiB of
	// segments at high ones. sysbench at full speed on this project's
	// 2-core machine, CPU hogs on both cores and a bulk transfer on
	// another loopback port beside it, never filled it.
	DefaultRingBlockSize = 1 << 20
	DefaultRingBlocks    = 32
	// MinRingBlockSize holds the largest segment loopback passes (its
	// MTU is 64 KiB) with the ring's headers.
	MinRingBlockSize = 128 << 10
	maxRingBytes     = 1 << 30
)

// withDefaults fills in what is zero.
func (r Ring) withDefaults() Ring {
	if r.BlockSize == 0 {
		r.BlockSize = DefaultRingBlockSize
	}
	if r.Blocks == 0 {
		r.Blocks = DefaultRingBlocks
	}
	return r
}

// Check says what is wrong with a ring's sizes, in the capture command's
// flags' words.
func (r Ring) Check() error {
	r = r.withDefaults()
	page := os.Getpagesize()
	switch {
	case r.BlockSize < MinRingBlockSize || r.BlockSize%page != 0:
		return fmt.Errorf("--ring-block-size %d: give at least %d KiB, a multiple of the page size (%d bytes)", r.BlockSize, MinRingBlockSize>>10, page)
	case r.Blocks < 2:
		return fmt.Errorf("--ring-blocks %d: give 2 or more", r.Blocks)
	case int64(r.BlockSize)*int64(r.Blocks) > maxRingBytes:
		return fmt.Errorf("--ring-block-size %d × --ring-blocks %d: a ring of at most %d MiB", r.BlockSize, r.Blocks, maxRingBytes>>20)
	}
	return nil
}

// String is the ring's size as the summary prints it: 32 × 1 MiB.
func (r Ring) String() string {
	r = r.withDefaults()
	if r.BlockSize%(1<<20) == 0 {
		return fmt.Sprintf("%d × %d MiB", r.Blocks, r.BlockSize>>20)
	}
	return fmt.Sprintf("%d × %d KiB", r.Blocks, r.BlockSize>>10)
}

// SniffStats says what a passive capture saw and what it lost.
type SniffStats struct {
	// Packets are the TCP segments to or from the port that were
	// decoded: those that carry bytes or open or close a connection
	// (pure ACKs stay in the kernel).
	Packets int64
	// KernelDrops are the packets the kernel dropped because every
	// block of the ring was still the reader's (PACKET_STATISTICS'
	// tp_drops); RingFull the times that began (tp_freeze_q_cnt).
	KernelDrops, RingFull int64
	// QueueDrops are the segments the ring's reader dropped because the
	// decoder's queue was full.
	QueueDrops int64
	// Truncated are segments longer than a ring block holds, dropped
	// (a larger --ring-block-size keeps them).
	Truncated int64
	// LostFlows are connections whose missing segments never came: the
	// rest of each was not decoded.
	LostFlows int64
	// Ring is the ring the capture read.
	Ring Ring
	// ringed counts the segments the reader took from the ring: the
	// filter's work, seen by the tests.
	ringed int64
}

// Lost says whether any segment was lost.
func (s SniffStats) Lost() bool {
	return s.KernelDrops > 0 || s.QueueDrops > 0 || s.Truncated > 0 || s.LostFlows > 0
}

// Summary is what the capture's summary says of the packets: their
// drops always, 0 included.
func (s SniffStats) Summary() string {
	line := fmt.Sprintf("packets: %d segments decoded; dropped by the kernel: %d (ring of %s full %d times); dropped by the decoder's queue: %d",
		s.Packets, s.KernelDrops, s.Ring, s.RingFull, s.QueueDrops)
	if s.Truncated > 0 {
		line += fmt.Sprintf("; longer than a ring block: %d", s.Truncated)
	}
	return line + fmt.Sprintf("; connections lost: %d\n", s.LostFlows)
}
