package logstore

import "fmt"

// Filesystem says what dir is stored on: a name such as "ext4", "xfs" or
// "tmpfs" ("unknown" when it cannot tell), and whether it is volatile,
// kept in memory only. On a volatile filesystem a sync reaches no disk:
// every acknowledged event is lost when the machine restarts, and write
// figures measure the CPU, not durability. The daemon warns about it at
// start-up and `mailroom bench` reports it.
func Filesystem(dir string) (name string, volatile bool, err error) {
	name, err = statFS(dir)
	if err != nil {
		return "", false, fmt.Errorf("finding the filesystem of %s: %w", dir, err)
	}
	return name, volatileFS[name], nil
}
