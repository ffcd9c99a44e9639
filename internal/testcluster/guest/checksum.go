package guest

import (
	"hash/crc32"
	"math"
	"os"
)

// fitChecksum pads data with zero bytes until its CRC-32 (IEEE) fits an
// int32. KubeVirt v1.7.0's virt-handler stores that checksum of a kernel-boot
// container's kernel and initrd in the VMI's status
// (kernelBootStatus.*.checksum), a uint32 that KubeVirt's CRD declares as
// int32: an API server that checks integer formats refuses a value above
// math.MaxInt32, and the VMI never leaves Scheduled. Trailing zeros change
// neither a bzImage, whose header says how long the kernel is, nor an
// initramfs, whose unpacker skips zero padding. About one byte in two.
func fitChecksum(data []byte) []byte {
	for crc32.ChecksumIEEE(data) > math.MaxInt32 {
		data = append(data, 0)
	}
	return data
}

// writeFitted writes data to path, padded by fitChecksum.
func writeFitted(path string, data []byte) error {
	return os.WriteFile(path, fitChecksum(data), 0o644)
}
