package rpc

import (
	"os"
	"syscall"

	"github.com/charmbracelet/log"
)

// InterruptibleStdin returns standard input as a file whose Close ends a
// blocked read. Go reads a blocking descriptor with a plain read(2), which
// Close cannot interrupt; in non-blocking mode the runtime poller owns the
// descriptor and Close wakes the reader, so exit does not wait for input.
func InterruptibleStdin(logger *log.Logger) *os.File {
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		logger.Debug("stdin stays blocking", "err", err.Error())
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "/dev/stdin")
}
