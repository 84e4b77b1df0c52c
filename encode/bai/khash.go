package bai

// binHash is an open-addressing hash table from bin number to chunk list
// that reproduces the bucket layout of htslib's khash integer map (identity
// hash, power-of-two buckets, triangular probing, 0.77 load factor and
// in-place rehash with displacement). The BAI writes bins in bucket order,
// so matching samtools byte for byte needs the same layout.
type binHash struct {
	keys     []uint32
	vals     []int32 // index into Builder.bins
	state    []uint8 // stateEmpty, stateDeleted or stateUsed
	size     uint32  // live entries
	occupied uint32  // live plus deleted entries
	upper    uint32
}

const (
	stateEmpty   = 0
	stateUsed    = 1
	stateDeleted = 2
)

func (h *binHash) buckets() uint32 { return uint32(len(h.keys)) }

// get returns the bucket holding key, or false.
func (h *binHash) get(key uint32) (uint32, bool) {
	n := h.buckets()
	if n == 0 {
		return 0, false
	}
	mask := n - 1
	i := key & mask
	last, step := i, uint32(0)
	for h.state[i] != stateEmpty && (h.state[i] == stateDeleted || h.keys[i] != key) {
		step++
		i = (i + step) & mask
		if i == last {
			return 0, false
		}
	}
	if h.state[i] != stateUsed {
		return 0, false
	}
	return i, true
}

// upperBound is the number of occupied buckets that triggers a resize.
func upperBound(n uint32) uint32 { return uint32(float64(n)*0.77 + 0.5) }

// roundUp32 rounds n up to a power of two (0 stays 0).
func roundUp32(n uint32) uint32 {
	n--
	n |= n >> 1
	n |= n >> 2
	n |= n >> 4
	n |= n >> 8
	n |= n >> 16
	return n + 1
}

// resize rehashes into newN buckets (rounded up to a power of two, at
// least 4), unless that would be too small for the live entries.
func (h *binHash) resize(newN uint32) {
	newN = roundUp32(newN)
	if newN < 4 {
		newN = 4
	}
	if h.size >= upperBound(newN) {
		return
	}
	oldN := h.buckets()
	newState := make([]uint8, newN) // all empty
	if oldN < newN {
		h.keys = append(h.keys, make([]uint32, newN-oldN)...)
		h.vals = append(h.vals, make([]int32, newN-oldN)...)
	}
	mask := newN - 1
	for j := uint32(0); j < oldN; j++ {
		if h.state[j] != stateUsed {
			continue
		}
		key, val := h.keys[j], h.vals[j]
		h.state[j] = stateDeleted
		for {
			i := key & mask
			for step := uint32(0); newState[i] != stateEmpty; {
				step++
				i = (i + step) & mask
			}
			newState[i] = stateUsed
			if i < oldN && h.state[i] == stateUsed {
				// Displace the element not yet moved and carry it on.
				h.keys[i], key = key, h.keys[i]
				h.vals[i], val = val, h.vals[i]
				h.state[i] = stateDeleted
				continue
			}
			h.keys[i], h.vals[i] = key, val
			break
		}
	}
	if oldN > newN {
		h.keys = h.keys[:newN]
		h.vals = h.vals[:newN]
	}
	h.state = newState
	h.occupied = h.size
	h.upper = upperBound(newN)
}

// put finds or inserts key and returns its bucket and whether it was
// newly inserted.
func (h *binHash) put(key uint32) (uint32, bool) {
	if h.occupied >= h.upper {
		if h.buckets() > h.size<<1 {
			h.resize(h.buckets() - 1) // drop deleted entries
		} else {
			h.resize(h.buckets() + 1) // grow
		}
	}
	n := h.buckets()
	mask := n - 1
	i := key & mask
	x, site := n, n
	if h.state[i] == stateEmpty {
		x = i
	} else {
		last, step := i, uint32(0)
		for h.state[i] != stateEmpty && (h.state[i] == stateDeleted || h.keys[i] != key) {
			if h.state[i] == stateDeleted {
				site = i
			}
			step++
			i = (i + step) & mask
			if i == last {
				x = site
				break
			}
		}
		if x == n {
			if h.state[i] == stateEmpty && site != n {
				x = site
			} else {
				x = i
			}
		}
	}
	switch h.state[x] {
	case stateEmpty:
		h.keys[x] = key
		h.state[x] = stateUsed
		h.size++
		h.occupied++
		return x, true
	case stateDeleted:
		h.keys[x] = key
		h.state[x] = stateUsed
		h.size++
		return x, true
	}
	return x, false
}

// del removes the entry in bucket x.
func (h *binHash) del(x uint32) {
	if x < h.buckets() && h.state[x] == stateUsed {
		h.state[x] = stateDeleted
		h.size--
	}
}
