package main

import (
	"errors"
	"syscall"
)

// fileCapability is the security.capability attribute of the file at p, nil
// when it has none (or its file system keeps no attributes).
func fileCapability(p string) ([]byte, error) {
	buf := make([]byte, 64)
	for {
		n, err := syscall.Getxattr(p, capabilityXattr, buf)
		switch {
		case errors.Is(err, syscall.ENODATA), errors.Is(err, syscall.ENOTSUP):
			return nil, nil
		case errors.Is(err, syscall.ERANGE):
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return nil, err
		}
		return buf[:n], nil
	}
}
