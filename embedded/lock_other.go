//go:build !unix || aix

package embedded

import "os"

// tryLock always succeeds where flock is missing (Windows, AIX): the data
// directory is not protected against a second server there.
func tryLock(*os.File) (bool, error) { return true, nil }

func unlock(*os.File) error { return nil }
