package device

// XCR0 bits of the AMX state: 17 is the tile configuration, 18 the tile
// data. Both must be enabled by the OS before any tile instruction.
const (
	xcr0TileCfg  = 1 << 17
	xcr0TileData = 1 << 18
)

// xcr0HasTiles reads XCR0 and reports (tiles enabled, XCR0 readable).
func xcr0HasTiles() (bool, bool) {
	x, ok := readXCR0()
	if !ok {
		return false, false
	}
	return x&(xcr0TileCfg|xcr0TileData) == xcr0TileCfg|xcr0TileData, true
}
