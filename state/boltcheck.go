package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt memory-maps the file and trusts the page ids in its meta page: a
// file cut short (a full disk, an interrupted copy, truncate(1)) makes it
// read past the end of the mapping, and the process dies of SIGBUS before
// any error can be returned. checkBoltFile reads the two meta pages the way
// bbolt will, picks the one bbolt will use, and refuses a file shorter than
// the pages that meta says are in use. It mirrors bbolt v1.x's on-disk
// layout (go.etcd.io/bbolt/internal/common, not importable).
const (
	boltMagic            = 0xED0CDAED
	boltVersion          = 2
	boltNoFreelist       = ^uint64(0)
	boltPageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	boltFreelistPageFlag = 0x10
	boltMetaSize         = 64 // the meta struct, checksum last
	boltMetaSumSize      = 56 // bytes of the meta covered by the checksum
	// bbolt looks for the second meta page at 1 KiB << i, up to 16 MiB.
	boltMinPageSize = 1 << 10
	boltMaxPageSize = 1 << 24
)

// damagedFileError is what checkBoltFile finds; openDB turns it into a
// *CorruptError naming the file.
type damagedFileError struct{ reason string }

func (e *damagedFileError) Error() string { return e.reason }

// errNotBolt says that neither meta page is valid: the file is not (or no
// longer) a bbolt database at all.
var errNotBolt = errors.New("not a bbolt database")

// boltMeta is the part of bbolt's meta page the size check needs.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: pages [0, pgid) are in use
	txid     uint64
}

// parseBoltMeta decodes and validates the meta page at the start of page
// (bbolt writes it in the machine's byte order, as it mmaps it).
func parseBoltMeta(page []byte) (boltMeta, bool) {
	if len(page) < boltPageHeaderSize+boltMetaSize {
		return boltMeta{}, false
	}
	b := page[boltPageHeaderSize : boltPageHeaderSize+boltMetaSize]
	ne := binary.NativeEndian
	if ne.Uint32(b[0:]) != boltMagic || ne.Uint32(b[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(b[:boltMetaSumSize])
	if h.Sum64() != ne.Uint64(b[boltMetaSumSize:]) {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: ne.Uint32(b[8:]),
		root:     ne.Uint64(b[16:]),
		freelist: ne.Uint64(b[32:]),
		pgid:     ne.Uint64(b[40:]),
		txid:     ne.Uint64(b[48:]),
	}, true
}

// readMetaAt reads and validates the meta page at off; ok is false when
// the file has no valid meta page there (including when it is too short).
func readMetaAt(r io.ReaderAt, off int64) (boltMeta, bool) {
	var buf [boltPageHeaderSize + boltMetaSize]byte
	if _, err := r.ReadAt(buf[:], off); err != nil {
		return boltMeta{}, false
	}
	return parseBoltMeta(buf[:])
}

// checkBoltFile reports (as *damagedFileError) a file bbolt would misread:
// one without a valid meta page, shorter than the meta page it would use
// says, or (walk) whose pages refer to places outside themselves (see
// pageWalk).
// What it cannot see (a damaged page that is still well-formed) bbolt
// may panic on; guard turns that into an error.
func checkBoltFile(r io.ReaderAt, size int64, walk bool) error {
	// The page size, found as bbolt finds it: from the first meta page if
	// it is valid, else from a valid second meta page at a power-of-two
	// offset.
	var pageSize int64
	if m, ok := readMetaAt(r, 0); ok {
		pageSize = int64(m.pageSize)
	} else {
		for off := int64(boltMinPageSize); off <= boltMaxPageSize && off < size; off <<= 1 {
			if m, ok := readMetaAt(r, off); ok {
				pageSize = int64(m.pageSize)
				break
			}
		}
	}
	if pageSize == 0 {
		return &damagedFileError{errNotBolt.Error()}
	}
	if pageSize < boltMinPageSize || pageSize > boltMaxPageSize || pageSize&(pageSize-1) != 0 {
		return &damagedFileError{fmt.Sprintf("not a bbolt database (page size %d)", pageSize)}
	}
	if size < 2*pageSize {
		return &damagedFileError{fmt.Sprintf("it is %d bytes long, shorter than its two %d-byte header pages: the file was cut short", size, pageSize)}
	}

	// The meta bbolt uses: the valid one with the higher transaction id.
	m0, ok0 := readMetaAt(r, 0)
	m1, ok1 := readMetaAt(r, pageSize)
	var m boltMeta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return &damagedFileError{errNotBolt.Error()}
	}
	if int64(m.pageSize) != pageSize {
		return &damagedFileError{fmt.Sprintf("its header pages disagree on the page size (%d and %d)", pageSize, m.pageSize)}
	}
	if m.freelist == boltNoFreelist {
		// sandboxer always writes the freelist; bbolt rebuilds a missing one
		// on a read-write open in a goroutine of its own, where a damaged
		// page panics beyond any recover.
		return &damagedFileError{"it has no freelist, which sandboxer always writes"}
	}
	if m.pgid < 2 || m.root < 2 || m.root >= m.pgid || m.freelist < 2 || m.freelist >= m.pgid {
		return &damagedFileError{fmt.Sprintf("its header is inconsistent (root page %d, freelist page %d, %d pages in use)", m.root, int64(m.freelist), m.pgid)}
	}
	// pgid * pageSize without overflow: pgid pages fit if pgid <= size/pageSize.
	if m.pgid > uint64(size/pageSize) {
		need := "more than 8 EiB"
		if m.pgid <= uint64(1<<62)/uint64(pageSize) {
			need = fmt.Sprintf("%d bytes", m.pgid*uint64(pageSize))
		}
		return &damagedFileError{fmt.Sprintf("it is %d bytes long, but its last transaction (%d) uses %d pages of %d bytes, %s: the file was cut short",
			size, m.txid, m.pgid, pageSize, need)}
	}
	if !walk {
		return nil
	}
	// The pages in use, read in one go: a state is a few MiB at most.
	used := make([]byte, int64(m.pgid)*pageSize)
	if _, err := r.ReadAt(used, 0); err != nil {
		return &damagedFileError{fmt.Sprintf("its pages cannot be read: %v", err)}
	}
	w := &pageWalk{data: used, pageSize: pageSize, pgid: m.pgid, seen: make([]bool, m.pgid)}
	if err := w.tree(m.root); err != nil {
		return err
	}
	return w.freelist(m.freelist)
}

// pageWalk checks, within the pages in use, everything bbolt will follow
// without checking: each page reachable from the root is in range, of the
// right kind and used once, and every element's key and value lie inside
// its page. Garbage there would send bbolt's reads (or a write's copy of
// a node) past the end of the mapping or into gigabyte allocations. It
// does not check key order: misordered keys make lookups miss, they do
// not crash.
type pageWalk struct {
	data     []byte // pages [0, pgid)
	pageSize int64
	pgid     uint64
	seen     []bool // by page id
}

const (
	boltBranchPageFlag = 0x01
	boltLeafPageFlag   = 0x02
	boltBucketLeafFlag = 0x01
	boltElementSize    = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	boltBucketHeader   = 16 // root pgid u64, sequence u64
	boltMaxInlineDepth = 64
)

func (w *pageWalk) damaged(format string, args ...any) error {
	return &damagedFileError{"its data is inconsistent: " + fmt.Sprintf(format, args...)}
}

// span returns page id and its overflow pages, marking them used.
func (w *pageWalk) span(id uint64) ([]byte, error) {
	if id < 2 || id >= w.pgid {
		return nil, w.damaged("page %d is out of range (%d pages in use)", id, w.pgid)
	}
	hdr := w.data[int64(id)*w.pageSize:]
	ne := binary.NativeEndian
	if got := ne.Uint64(hdr); got != id {
		return nil, w.damaged("page %d calls itself page %d", id, got)
	}
	overflow := uint64(ne.Uint32(hdr[12:]))
	if overflow >= w.pgid-id {
		return nil, w.damaged("page %d runs past the %d pages in use", id, w.pgid)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, w.damaged("page %d is used twice", i)
		}
		w.seen[i] = true
	}
	return hdr[:int64(overflow+1)*w.pageSize], nil
}

// tree checks the pages of the bucket rooted at page root, and of the
// buckets inside it.
func (w *pageWalk) tree(root uint64) error {
	stack := []uint64{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		page, err := w.span(id)
		if err != nil {
			return err
		}
		if err := w.page(id, page, &stack, 0); err != nil {
			return err
		}
	}
	return nil
}

// page checks the elements of one page (or an inline bucket's page, id 0)
// and pushes the pages they refer to.
func (w *pageWalk) page(id uint64, page []byte, stack *[]uint64, depth int) error {
	if len(page) < boltPageHeaderSize {
		return w.damaged("page %d is shorter than a page header", id)
	}
	ne := binary.NativeEndian
	flags, count := ne.Uint16(page[8:]), int(ne.Uint16(page[10:]))
	if boltPageHeaderSize+count*boltElementSize > len(page) {
		return w.damaged("page %d claims %d elements, more than it holds", id, count)
	}
	for i := range count {
		at := boltPageHeaderSize + i*boltElementSize
		elem := page[at : at+boltElementSize]
		switch flags {
		case boltBranchPageFlag:
			if id == 0 {
				return w.damaged("an inline bucket holds a branch page")
			}
			pos, ksize := int64(ne.Uint32(elem[0:])), int64(ne.Uint32(elem[4:]))
			if ksize == 0 || int64(at)+pos+ksize > int64(len(page)) {
				return w.damaged("page %d: key %d lies outside the page", id, i)
			}
			*stack = append(*stack, ne.Uint64(elem[8:]))
		case boltLeafPageFlag:
			eflags, pos, ksize, vsize := ne.Uint32(elem[0:]), int64(ne.Uint32(elem[4:])), int64(ne.Uint32(elem[8:])), int64(ne.Uint32(elem[12:]))
			if ksize == 0 || int64(at)+pos+ksize+vsize > int64(len(page)) {
				return w.damaged("page %d: element %d lies outside the page", id, i)
			}
			if eflags&boltBucketLeafFlag == 0 {
				continue
			}
			value := page[int64(at)+pos+ksize : int64(at)+pos+ksize+vsize]
			if len(value) < boltBucketHeader {
				return w.damaged("page %d: bucket %d has no header", id, i)
			}
			root := ne.Uint64(value)
			if root != 0 {
				*stack = append(*stack, root)
				continue
			}
			if depth >= boltMaxInlineDepth {
				return w.damaged("inline buckets nested too deep")
			}
			if err := w.page(0, value[boltBucketHeader:], stack, depth+1); err != nil {
				return err
			}
		default:
			return w.damaged("page %d is neither a branch nor a leaf page (flags %#x)", id, flags)
		}
	}
	if flags == boltBranchPageFlag && count == 0 {
		return w.damaged("branch page %d is empty", id)
	}
	if flags != boltBranchPageFlag && flags != boltLeafPageFlag {
		return w.damaged("page %d is neither a branch nor a leaf page (flags %#x)", id, flags)
	}
	return nil
}

// freelist checks the freelist page, which bbolt reads whole on every
// read-write open and allocates from: each free page must be in range and
// not in use.
func (w *pageWalk) freelist(id uint64) error {
	page, err := w.span(id)
	if err != nil {
		return err
	}
	ne := binary.NativeEndian
	if flags := ne.Uint16(page[8:]); flags != boltFreelistPageFlag {
		return w.damaged("freelist page %d is not a freelist page (flags %#x)", id, flags)
	}
	count, first := uint64(ne.Uint16(page[10:])), uint64(boltPageHeaderSize)
	if count == 0xFFFF { // too many for the header: the first slot holds the count
		count, first = ne.Uint64(page[boltPageHeaderSize:]), first+8
	}
	if count > (uint64(len(page))-first)/8 {
		return w.damaged("freelist page %d claims %d free pages, more than it holds", id, count)
	}
	for i := range count {
		free := ne.Uint64(page[first+8*i:])
		if free < 2 || free >= w.pgid || w.seen[free] {
			return w.damaged("free page %d is out of range or in use", free)
		}
		w.seen[free] = true
	}
	return nil
}
