package wire

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// portFilter is the classic BPF program the packet socket runs in the
// kernel, so that only what the decoder needs reaches user space: TCP
// segments from or to port, over IPv4 (whole datagrams and first
// fragments) or IPv6 (TCP as the first header), that carry bytes or open
// or close a connection. Pure ACKs, other ports, other protocols and, on
// loopback (where each packet passes twice), the copy going out stay in
// the kernel: they were most of what the old reader was handed on a busy
// host, and what overflowed its buffer.
//
// The socket is SOCK_DGRAM: the program sees each packet from its
// network header, whatever the link (Ethernet, loopback, a tunnel).
func portFilter(port uint16, loopback bool) ([]bpf.RawInstruction, error) {
	const (
		synFinRst = 0x07
		ipTCP     = 6
		outgoing  = 4 // PACKET_OUTGOING
	)
	p := uint32(port)
	var prog []any
	if loopback {
		prog = append(prog,
			bpf.LoadExtension{Num: bpf.ExtType},
			jump{cond: bpf.JumpEqual, val: outgoing, yes: "drop"},
		)
	}
	prog = append(prog,
		// The IP version, from the first nibble.
		bpf.LoadAbsolute{Off: 0, Size: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4},
		jump{cond: bpf.JumpEqual, val: 6, yes: "ipv6"},
		jump{cond: bpf.JumpNotEqual, val: 4, yes: "drop"},

		// IPv4: TCP, not a later fragment; X is the IP header's length.
		bpf.LoadAbsolute{Off: 9, Size: 1},
		jump{cond: bpf.JumpNotEqual, val: ipTCP, yes: "drop"},
		bpf.LoadAbsolute{Off: 6, Size: 2},
		jump{cond: bpf.JumpBitsSet, val: 0x1fff, yes: "drop"},
		bpf.LoadMemShift{Off: 0},
		bpf.LoadIndirect{Off: 0, Size: 2},
		jump{cond: bpf.JumpEqual, val: p, yes: "v4port"},
		bpf.LoadIndirect{Off: 2, Size: 2},
		jump{cond: bpf.JumpNotEqual, val: p, yes: "drop"},
		label("v4port"),
		bpf.LoadIndirect{Off: 13, Size: 1},
		jump{cond: bpf.JumpBitsSet, val: synFinRst, yes: "accept"},
		// Bytes past both headers: the total length above the IP
		// header's and TCP's (a total of 0 is a segment over 64 KiB,
		// BIG TCP's: kept).
		bpf.LoadIndirect{Off: 12, Size: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 2},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x3c},
		bpf.ALUOpX{Op: bpf.ALUOpAdd},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: 2, Size: 2},
		jump{cond: bpf.JumpEqual, val: 0, yes: "accept"},
		jump{x: true, cond: bpf.JumpGreaterThan, yes: "accept", no: "drop"},

		// IPv6: TCP right after the fixed header.
		label("ipv6"),
		bpf.LoadAbsolute{Off: 6, Size: 1},
		jump{cond: bpf.JumpNotEqual, val: ipTCP, yes: "drop"},
		bpf.LoadAbsolute{Off: 40, Size: 2},
		jump{cond: bpf.JumpEqual, val: p, yes: "v6port"},
		bpf.LoadAbsolute{Off: 42, Size: 2},
		jump{cond: bpf.JumpNotEqual, val: p, yes: "drop"},
		label("v6port"),
		bpf.LoadAbsolute{Off: 53, Size: 1},
		jump{cond: bpf.JumpBitsSet, val: synFinRst, yes: "accept"},
		bpf.LoadAbsolute{Off: 52, Size: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 2},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x3c},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: 4, Size: 2}, // the payload's length, TCP's header in it
		jump{x: true, cond: bpf.JumpGreaterThan, yes: "accept", no: "drop"},

		label("drop"),
		bpf.RetConstant{Val: 0},
		label("accept"),
		bpf.RetConstant{Val: 0xffffffff}, // the whole packet
	)
	ins, err := link(prog)
	if err != nil {
		return nil, err
	}
	return bpf.Assemble(ins)
}

// A label names the next instruction of a program given to link.
type label string

// A jump is a conditional jump to labels: against val, or against X
// (x); an empty label is the next instruction.
type jump struct {
	x       bool
	cond    bpf.JumpTest
	val     uint32
	yes, no string
}

// link turns a program with labels and jumps to them into instructions,
// counting each jump's skips.
func link(prog []any) ([]bpf.Instruction, error) {
	at := map[string]int{}
	n := 0
	for _, x := range prog {
		if l, ok := x.(label); ok {
			at[string(l)] = n
			continue
		}
		n++
	}
	var out []bpf.Instruction
	for _, x := range prog {
		switch x := x.(type) {
		case label:
		case jump:
			i := len(out)
			skip := func(to string) (uint8, error) {
				if to == "" {
					return 0, nil
				}
				t, ok := at[to]
				if !ok || t <= i || t-i-1 > 255 {
					return 0, fmt.Errorf("bpf: jump from %d to %q out of reach", i, to)
				}
				return uint8(t - i - 1), nil
			}
			yes, err := skip(x.yes)
			if err != nil {
				return nil, err
			}
			no, err := skip(x.no)
			if err != nil {
				return nil, err
			}
			if x.x {
				out = append(out, bpf.JumpIfX{Cond: x.cond, SkipTrue: yes, SkipFalse: no})
			} else {
				out = append(out, bpf.JumpIf{Cond: x.cond, Val: x.val, SkipTrue: yes, SkipFalse: no})
			}
		case bpf.Instruction:
			out = append(out, x)
		default:
			return nil, fmt.Errorf("bpf: %T in a program", x)
		}
	}
	return out, nil
}
