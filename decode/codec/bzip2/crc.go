package bzip2

import "encoding/binary"

// crcPoly is the CRC-32 polynomial of bzip2, used most significant bit
// first (not reflected, unlike hash/crc32's IEEE table).
const crcPoly = 0x04C11DB7

// crcTables holds slicing-by-8 tables: crcTables[0][b] is the CRC register
// update for byte b, and crcTables[k][b] the contribution of byte b
// followed by k zero bytes. It is computed once and never written after.
var crcTables = makeCRCTables()

func makeCRCTables() *[8][256]uint32 {
	t := new([8][256]uint32)
	for b := range 256 {
		c := uint32(b) << 24
		for range 8 {
			if c&(1<<31) != 0 {
				c = c<<1 ^ crcPoly
			} else {
				c <<= 1
			}
		}
		t[0][b] = c
	}
	for k := 1; k < 8; k++ {
		for b := range 256 {
			c := t[k-1][b]
			t[k][b] = c<<8 ^ t[0][c>>24]
		}
	}
	return t
}

// blockCRC returns the bzip2 CRC of p: register initialised to all ones,
// bits most significant first, result complemented.
func blockCRC(p []byte) uint32 {
	t := crcTables
	c := ^uint32(0)
	for len(p) >= 8 {
		x := c ^ binary.BigEndian.Uint32(p)
		c = t[7][x>>24] ^ t[6][x>>16&0xff] ^ t[5][x>>8&0xff] ^ t[4][x&0xff] ^
			t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]
		p = p[8:]
	}
	for _, b := range p {
		c = c<<8 ^ t[0][byte(c>>24)^b]
	}
	return ^c
}
