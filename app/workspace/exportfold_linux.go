package workspace

// exportFoldsNames: Linux's filesystems compare names byte for byte (an
// export is not written to a case-folding ext4 folder or a FAT disk:
// Sandbar's data directory is the person's own).
const exportFoldsNames = false
