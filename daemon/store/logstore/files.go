package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// File names. Seqs are zero-padded so that names sort in seq order.
const (
	lockName       = "LOCK"
	segmentPrefix  = "log-"
	segmentSuffix  = ".jsonl"
	snapshotPrefix = "snapshot-"
	snapshotSuffix = ".json"
	tempSuffix     = ".tmp"
	brokenSuffix   = ".broken"
)

func segmentName(start uint64) string {
	return fmt.Sprintf("%s%020d%s", segmentPrefix, start, segmentSuffix)
}
func snapshotName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", snapshotPrefix, seq, snapshotSuffix)
}

// parseSeqName returns the seq in a name made by segmentName or snapshotName.
func parseSeqName(name, prefix, suffix string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, suffix); !ok || len(s) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	return seq, err == nil
}

// namedSeq is a segment (seq = its first event) or a snapshot (seq = the
// last event it contains) found in the data dir.
type namedSeq struct {
	name string
	seq  uint64
}

// dirListing is what the data dir holds, in seq order.
type dirListing struct {
	segments  []namedSeq
	snapshots []namedSeq
	temps     []string
}

func listDir(dir string) (dirListing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dirListing{}, fmt.Errorf("listing data dir %s: %w", dir, err)
	}
	var l dirListing
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if seq, ok := parseSeqName(name, segmentPrefix, segmentSuffix); ok {
			l.segments = append(l.segments, namedSeq{name, seq})
		} else if seq, ok := parseSeqName(name, snapshotPrefix, snapshotSuffix); ok {
			l.snapshots = append(l.snapshots, namedSeq{name, seq})
		} else if strings.HasPrefix(name, snapshotPrefix) && strings.HasSuffix(name, tempSuffix) {
			l.temps = append(l.temps, name)
		}
	}
	bySeq := func(s []namedSeq) { sort.Slice(s, func(i, j int) bool { return s[i].seq < s[j].seq }) }
	bySeq(l.segments)
	bySeq(l.snapshots)
	return l, nil
}

// lockDir takes the data dir's exclusive lock, so that two daemons never
// write the same log. The lock dies with the process, unlike a pid file.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "process " + pid
			}
			return nil, fmt.Errorf("data dir %s is in use: %s holds its lock %s; stop that daemon or choose another data dir", dir, who, path)
		}
		return nil, fmt.Errorf("locking data dir %s: %w", dir, err)
	}
	// The pid only helps an operator read the message above; failing to
	// write it does not matter.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// unlockDir releases the data dir's lock explicitly, then closes its file.
// Closing alone is not enough: a child process started at that moment holds
// a copy of the descriptor until it execs, and with it the lock, so a daemon
// reopening the dir (a restart in the same process) would find it in use.
func unlockDir(f *os.File) error {
	uerr := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return errors.Join(uerr, f.Close())
}

// syncDir makes the creations, renames and removals of names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// replaceFileWith makes what write writes the content of path so that a
// crash leaves either the old file or the whole new one: write a temp
// file, fsync, close, rename, fsync the directory. The content is written
// as it is made, never held whole (a snapshot can be hundreds of MB).
func replaceFileWith(path string, write func(io.Writer) error) (err error) {
	tmp := path + tempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// keepCopy durably copies path to an unused name ending in .broken beside
// it and returns that name.
func keepCopy(path string) (string, error) {
	dst := path + brokenSuffix
	for i := 2; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s.%d%s", path, i, brokenSuffix)
	}
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, src)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}
