package logstore

// SyncSeconds reports the time spent syncing the log and the number of
// syncs (group commits) since the store was opened: for the benchmarks.
func (s *Store) SyncSeconds() (total float64, syncs uint64) { return s.syncs.Sum() }
