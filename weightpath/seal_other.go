//go:build !linux && !darwin

package weightpath

// statID: no inode or ctime here, so caches are never sealed and every
// start checks every byte.
func statID(string) fileID { return fileID{} }
