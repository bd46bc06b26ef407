//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// hasExt4Superblock reports whether the disk at p carries an ext2/3/4
// superblock: magic 0xEF53 at byte 1080 (offset 56 of the superblock at
// 1024). A fresh sparse scratch disk is all zeros.
func hasExt4Superblock(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [2]byte
	if _, err := f.ReadAt(b[:], 1080); err == io.EOF {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read superblock of %s: %w", p, err)
	}
	return binary.LittleEndian.Uint16(b[:]) == 0xEF53, nil
}
