//go:build !linux

package logstore

import "os"

// fdatasync falls back to a full fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// fdatasyncHolding is fdatasync: only Linux keeps the P through the sync.
func fdatasyncHolding(f *os.File) error { return fdatasync(f) }
