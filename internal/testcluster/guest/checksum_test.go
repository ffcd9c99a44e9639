package guest

import (
	"bytes"
	"hash/crc32"
	"math"
	"testing"
)

func TestFitChecksum(t *testing.T) {
	padded := 0
	for i := range 64 {
		data := bytes.Repeat([]byte{byte(i), 0x5a}, 100+i)
		got := fitChecksum(bytes.Clone(data))
		if sum := crc32.ChecksumIEEE(got); sum > math.MaxInt32 {
			t.Fatalf("input %d: checksum %d does not fit an int32", i, sum)
		}
		if !bytes.Equal(got[:len(data)], data) || bytes.Count(got[len(data):], []byte{0}) != len(got)-len(data) {
			t.Fatalf("input %d: padding changed the data or is not zeros", i)
		}
		if len(got) > len(data) {
			padded++
		}
	}
	// Half the checksums are above math.MaxInt32: the test saw both kinds.
	if padded == 0 || padded == 64 {
		t.Fatalf("%d of 64 inputs padded; want some and not all", padded)
	}
}
