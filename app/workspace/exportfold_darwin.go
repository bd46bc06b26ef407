package workspace

// exportFoldsNames: APFS and HFS+ as macOS formats them ignore case and
// normalise Unicode. (On a case-sensitive APFS volume the export leaves
// out names that differ from another only in case, and a symlink naming
// another spelling of a name finds nothing there.)
const exportFoldsNames = true
