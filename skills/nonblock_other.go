//go:build !unix

package skills

// oNonblock: no named pipes to wait on in the file system here.
const oNonblock = 0
