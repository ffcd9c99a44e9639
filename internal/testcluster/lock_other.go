//go:build !unix

package testcluster

import "context"

// lockFile is a no-op where flock is unavailable; concurrent builds then race
// but each writes complete files.
func lockFile(context.Context, string, func()) (func(), error) { return func() {}, nil }
