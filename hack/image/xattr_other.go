//go:build !linux

package main

// fileCapability reads no capabilities where the system has no
// security.capability attribute: only Linux has file capabilities.
func fileCapability(string) ([]byte, error) { return nil, nil }
