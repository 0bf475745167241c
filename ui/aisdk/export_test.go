package aisdk

// SetMaxWire bounds request bodies at n bytes instead of MaxWire (tests
// only; 0 resets it).
func SetMaxWire(n int64) {
	if n == 0 {
		n = MaxWire
	}
	maxWire = n
}
