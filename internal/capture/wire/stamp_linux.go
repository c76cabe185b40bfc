package wire

import (
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampedReader reads src with the time each read's bytes reached this
// host: the kernel's receive timestamp (SO_TIMESTAMPNS; on TCP, of the
// last segment the read took), so that two connections' messages keep
// the order in which they arrived however late the goroutine that reads
// each one runs on a busy host. Where the kernel gives none (TLS, a unix
// socket), the time of the read.
func stampedReader(src io.Reader) func(buf []byte) (int, time.Time, error) {
	plain := func(buf []byte) (int, time.Time, error) {
		n, err := src.Read(buf)
		return n, time.Now(), err
	}
	// A unix stream socket keeps no timestamps (Linux 6.18); TLS and a
	// buffered reader hand on bytes read before.
	tc, ok := src.(*net.TCPConn)
	if !ok {
		return plain
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return plain
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return plain
	}
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	return func(buf []byte) (int, time.Time, error) {
		var n, oobn int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			for {
				n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
				if rerr != unix.EINTR {
					return rerr != unix.EAGAIN
				}
			}
		})
		now := time.Now()
		if err == nil {
			err = rerr
		}
		if err != nil {
			return 0, now, err
		}
		if n == 0 && len(buf) > 0 {
			return 0, now, io.EOF
		}
		if at, ok := kernelStamp(oob[:oobn]); ok && !at.After(now) {
			return n, at, nil
		}
		return n, now, nil
	}
}

// stampFrom asks for receive timestamps on the listener, so that the
// kernel turns them on (a deferred work item, for the first socket that
// asks) before the first client's bytes arrive; its accepted sockets
// ask again.
func stampFrom(ln net.Listener) {
	if sc, ok := ln.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
		}
	}
}

// kernelStamp reads an SCM_TIMESTAMPNS control message.
func kernelStamp(oob []byte) (time.Time, bool) {
	const hdr = int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return time.Time{}, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l-hdr >= 16 {
			data := oob[unix.CmsgLen(0):]
			sec := int64(binary.NativeEndian.Uint64(data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
			if sec == 0 && nsec == 0 {
				return time.Time{}, false
			}
			return time.Unix(sec, nsec), true
		}
		oob = oob[min(len(oob), unix.CmsgSpace(l-hdr)):]
	}
	return time.Time{}, false
}
