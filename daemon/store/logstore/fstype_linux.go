package logstore

import "syscall"

// fsNames names the filesystems a data dir is likely to be on, by the magic
// number statfs(2) reports (linux/magic.h).
var fsNames = map[int64]string{
	0xEF53:     "ext4", // ext2, ext3 and ext4 share it
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x2FC12FC1: "zfs",
	0xF2F52010: "f2fs",
	0x01021994: "tmpfs",
	0x858458F6: "ramfs",
	0x794C7630: "overlayfs",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0x65735546: "fuse",
	0x01021997: "9p",
}

// volatileFS are filesystems kept in memory only: fdatasync on them reaches
// no disk, and everything is gone after a reboot.
var volatileFS = map[string]bool{"tmpfs": true, "ramfs": true}

func statFS(dir string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	if name, ok := fsNames[int64(st.Type)]; ok {
		return name, nil
	}
	return "unknown", nil
}
