package rpc

import (
	"io"
	"os"
	"syscall"

	"github.com/charmbracelet/log"
)

// InterruptibleStdin returns standard input as a reader whose Close ends a
// blocked read. Go reads a blocking descriptor with a plain read(2), which
// Close cannot interrupt; in non-blocking mode the runtime poller owns the
// descriptor and Close wakes the reader, so exit does not wait for input.
// Close puts the descriptor back in blocking mode first: the mode belongs to
// the open file, which a terminal shares with the shell.
func InterruptibleStdin(logger *log.Logger) io.ReadCloser {
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		logger.Debug("stdin stays blocking", "err", err.Error())
		return os.Stdin
	}
	return &nonblockingStdin{File: os.NewFile(uintptr(fd), "/dev/stdin"), fd: fd}
}

type nonblockingStdin struct {
	*os.File
	fd int
}

func (s *nonblockingStdin) Close() error {
	_ = syscall.SetNonblock(s.fd, false)
	return s.File.Close()
}
