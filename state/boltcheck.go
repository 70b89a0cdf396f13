package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
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
// one without a valid meta page, or shorter than the meta page it would
// use says. It does not look at data pages; reads of those are guarded
// (see guard).
func checkBoltFile(r io.ReaderAt, size int64) error {
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
	return checkFreelistPage(r, m, pageSize)
}

// checkFreelistPage checks that the freelist page, which bbolt reads whole
// on every read-write open, lies within the pages in use.
func checkFreelistPage(r io.ReaderAt, m boltMeta, pageSize int64) error {
	var hdr [boltPageHeaderSize + 8]byte
	if _, err := r.ReadAt(hdr[:], int64(m.freelist)*pageSize); err != nil {
		return &damagedFileError{fmt.Sprintf("its freelist page %d cannot be read: %v", m.freelist, err)}
	}
	ne := binary.NativeEndian
	flags, count, overflow := ne.Uint16(hdr[8:]), uint64(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:]))
	if flags != boltFreelistPageFlag {
		return &damagedFileError{fmt.Sprintf("its freelist page %d is not a freelist page", m.freelist)}
	}
	if m.freelist+overflow >= m.pgid {
		return &damagedFileError{fmt.Sprintf("its freelist (page %d and %d more) runs past the %d pages in use", m.freelist, overflow, m.pgid)}
	}
	capacity := (uint64(overflow+1)*uint64(pageSize) - boltPageHeaderSize) / 8
	if count == 0xFFFF { // too many for the header: the first slot holds the count
		count, capacity = ne.Uint64(hdr[boltPageHeaderSize:]), capacity-1
	}
	if count > capacity {
		return &damagedFileError{fmt.Sprintf("its freelist page %d claims %d entries, more than it holds", m.freelist, count)}
	}
	return nil
}

// checkBoltOpenFile runs checkBoltFile on an open file.
func checkBoltOpenFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkBoltFile(f, fi.Size())
}
