package logstore

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), skipping the timestamps an fsync would also write.
func fdatasync(f *os.File) error {
	return fdatasyncWith(f, func(fd uintptr) error { return syscall.Fdatasync(int(fd)) })
}

// fdatasyncHolding is fdatasync for the writer's group commit, made
// without telling the Go scheduler that the goroutine is in a system call,
// so it keeps its P (its slot to run Go code) while the disk works. A
// goroutine returning from an ordinary system call on a busy daemon finds
// its P handed to a request goroutine and queues for one; that wait was
// longer than the sync itself (0.74 ms per sync against 0.22 ms, measured
// on the development machine with every P busy), and every acknowledgement
// waits behind it. The daemon runs one P more than it has cores for this
// (cmd/mailroom/tune.go). The price: a garbage collection's
// stop-the-world waits until the sync returns, so the writer uses this
// only while syncs are fast (see Store.commit).
func fdatasyncHolding(f *os.File) error {
	return fdatasyncWith(f, func(fd uintptr) error {
		if _, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0); e != 0 {
			return e
		}
		return nil
	})
}

func fdatasyncWith(f *os.File, sync func(fd uintptr) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = sync(fd); !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
