package tb

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Reading event files written by any TensorBoard writer (PyTorch's SummaryWriter,
// tf.summary, tensorboardX, this package's Writer) while they are being written.
// File follows one file, Reader the files of one run, FindRuns the runs of a log
// directory. Nothing here generates protocol buffer code: the framing is checked by
// hand and the messages are decoded with protowire (decode.go).

// FilePrefix starts the name of every event file.
const FilePrefix = "events.out.tfevents."

// headerLen is a record's length and its checksum; trailerLen the data's checksum.
const headerLen, trailerLen = 12, 4

// MaxRecord bounds the records the reader loads. Larger ones (an image summary of
// tens of megabytes) hold no scalars and are skipped unread, their length checksum
// being sound.
const MaxRecord = 64 << 20

// maxPlausibleRecord bounds the length a sound header can hold: TensorBoard's
// writers never write a record of a gigabyte. A header whose checksum holds but
// whose length is beyond it (2^60, say) is corrupt, not a record still being
// written, and is skipped like a bad checksum.
const maxPlausibleRecord = 1 << 30

// ErrRewritten is returned when an event file shrank, vanished or was replaced since
// it was last read. Event files only grow, so the log directory was rewritten: the
// caller starts over.
var ErrRewritten = errors.New("event file rewritten")

// CorruptError reports a record that failed its checksums or did not decode. The
// reader skips it and carries on with the next sound record.
type CorruptError struct {
	Path   string
	Offset int64  // where the bad record starts
	Reason string // "bad length checksum", "bad data checksum", "undecodable event: …"
	// Skipped is how many bytes were skipped to reach the next sound record; 0 while
	// no sound record follows yet (the reader then waits for one, and reports the skip
	// again once found).
	Skipped int64
}

func (e *CorruptError) Error() string {
	if e.Skipped == 0 {
		return fmt.Sprintf("%s: bad record at offset %d (%s); no sound record after it yet", e.Path, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%s: bad record at offset %d (%s); skipped %d bytes", e.Path, e.Offset, e.Reason, e.Skipped)
}

// IsEventFile reports whether a file name is an event file's.
func IsEventFile(name string) bool { return strings.HasPrefix(name, FilePrefix) }

// File follows one event file as it grows.
type File struct {
	path    string
	id      os.FileInfo // the file read so far, to notice it being replaced
	off     int64       // start of the first record not yet consumed
	bad     int64       // offset of a bad header already reported while waiting; -1 none
	scanned int64       // a resync scan from bad found nothing before this offset
	limit   int64       // when > 0, Read stops at the first record starting at or after it
	size    int64       // the file's size when last read
	buf     []byte
	br      *bufio.Reader
	ev      Event
	tags    interner
}

// NewFile returns a File that reads path from its beginning.
func NewFile(path string) *File { return &File{path: path, bad: -1} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Offset is how far the file has been consumed: a partial record at its end is not.
func (f *File) Offset() int64 { return f.off }

// Read passes every record appended since the previous Read to fn, in file order,
// and returns how many it passed. A record still being written at the end of the
// file is left for a later Read. A corrupt record is reported to warn (when not nil)
// and skipped: after a bad data checksum the length (itself checksummed) finds the
// next record; after a bad length checksum the reader scans for the next offset
// where a sound record starts. Read returns ErrRewritten, reading nothing, when the
// file shrank, vanished or was replaced. fn must not keep the *Event or its Values.
func (f *File) Read(fn func(*Event), warn func(*CorruptError)) (int, error) {
	fh, size, err := f.openGrown()
	if fh == nil {
		return 0, err
	}
	defer fh.Close()
	report := func(e *CorruptError) {
		if warn != nil {
			warn(e)
		}
	}
	f.seek(fh, size, f.off)
	n := 0
	for size-f.off >= headerLen && (f.limit <= 0 || f.off < f.limit) {
		got, more, err := f.record(fh, size, report)
		if err != nil {
			return n, err
		}
		if got {
			fn(&f.ev)
			n++
		}
		if !more {
			break
		}
	}
	return n, nil
}

// openGrown opens the file when it holds more than has been read, nil when it
// does not (or does not exist yet); ErrRewritten when it shrank, vanished or
// was replaced.
func (f *File) openGrown() (*os.File, int64, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		if f.id != nil {
			return nil, 0, fmt.Errorf("%s: %w (it vanished)", f.path, ErrRewritten)
		}
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := fh.Stat()
	if err == nil && f.id != nil && (!os.SameFile(f.id, fi) || fi.Size() < f.off) {
		err = fmt.Errorf("%s: %w", f.path, ErrRewritten)
	}
	if err != nil || fi.Size() <= f.off {
		fh.Close()
		if err == nil {
			f.id, f.size = fi, fi.Size()
		}
		return nil, 0, err
	}
	f.id, f.size = fi, fi.Size()
	return fh, fi.Size(), nil
}

// seek moves the reader to offset off of fh (size bytes long).
func (f *File) seek(fh *os.File, size, off int64) {
	f.off = off
	if f.br == nil {
		f.br = bufio.NewReaderSize(nil, 256<<10)
	}
	f.br.Reset(io.NewSectionReader(fh, off, size-off))
}

// record reads the record at f.off into f.ev (got) and moves past it, or past
// a corrupt stretch, reporting it; more is false when the rest of the file is
// a record still being written or corrupt without a sound record after it.
func (f *File) record(fh *os.File, size int64, report func(*CorruptError)) (got, more bool, err error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(f.br, hdr[:]); err != nil {
		return false, false, readErr(f.path, err)
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	reason := ""
	switch {
	case maskedCRC(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]):
		reason = "bad length checksum"
	case length > maxPlausibleRecord:
		reason = fmt.Sprintf("implausible record length %d", length)
	}
	if reason != "" {
		more, err := f.resyncAfter(fh, size, reason, report)
		return false, more, err
	}
	avail := uint64(size - f.off - headerLen)
	if length > avail || avail-length < trailerLen {
		return false, false, nil // still being written
	}
	total := headerLen + int64(length) + trailerLen
	if length > MaxRecord {
		f.seek(fh, size, f.off+total)
		return false, true, nil
	}
	if need := int(length) + trailerLen; cap(f.buf) < need {
		f.buf = make([]byte, need)
	}
	data := f.buf[:length+trailerLen]
	if _, err := io.ReadFull(f.br, data); err != nil {
		return false, false, readErr(f.path, err)
	}
	rec := data[:length]
	if maskedCRC(rec) != binary.LittleEndian.Uint32(data[length:]) {
		report(&CorruptError{Path: f.path, Offset: f.off, Reason: "bad data checksum", Skipped: total})
	} else if err := unmarshalEvent(rec, &f.ev, &f.tags); err != nil {
		report(&CorruptError{Path: f.path, Offset: f.off, Reason: "undecodable event: " + err.Error(), Skipped: total})
	} else {
		got = true
	}
	f.off += total
	return got, true, nil
}

// resyncAfter handles a record whose length cannot be trusted: it moves to
// the next offset where a sound record starts (more), or reports the stretch
// once and stops when there is none yet.
func (f *File) resyncAfter(fh *os.File, size int64, reason string, report func(*CorruptError)) (more bool, err error) {
	next, found, err := f.resync(fh, size)
	if err != nil {
		return false, err
	}
	if !found {
		if f.bad != f.off {
			f.bad = f.off
			report(&CorruptError{Path: f.path, Offset: f.off, Reason: reason})
		}
		return false, nil
	}
	report(&CorruptError{Path: f.path, Offset: f.off, Reason: reason, Skipped: next - f.off})
	f.bad, f.scanned = -1, 0
	f.seek(fh, size, next)
	return true, nil
}

func readErr(path string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The file shrank between Stat and the read: the next Read notices.
		return fmt.Errorf("%s: %w (it shrank while read)", path, ErrRewritten)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// resync looks past a bad header at f.off for the next offset where a sound record
// starts: a header whose length checksum holds, with a length within MaxRecord, and
// whose data checksum holds too when its data is all there (a record still being
// written is taken on the strength of its length checksum alone).
func (f *File) resync(fh *os.File, size int64) (int64, bool, error) {
	const window = 64 << 10
	from := max(f.off+1, f.scanned)
	buf := make([]byte, window+headerLen-1)
	for from+headerLen <= size {
		n, err := fh.ReadAt(buf[:min(int64(len(buf)), size-from)], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, fmt.Errorf("%s: %w", f.path, err)
		}
		b := buf[:n]
		for i := 0; i+headerLen <= len(b); i++ {
			if maskedCRC(b[i:i+8]) != binary.LittleEndian.Uint32(b[i+8:i+12]) {
				continue
			}
			at := from + int64(i)
			length := binary.LittleEndian.Uint64(b[i : i+8])
			if length > MaxRecord {
				continue
			}
			end := at + headerLen + int64(length) + trailerLen
			if end > size {
				return at, true, nil
			}
			data := make([]byte, length+trailerLen)
			if _, err := fh.ReadAt(data, at+headerLen); err != nil {
				return 0, false, fmt.Errorf("%s: %w", f.path, err)
			}
			if maskedCRC(data[:length]) == binary.LittleEndian.Uint32(data[length:]) {
				return at, true, nil
			}
		}
		if len(b) < headerLen {
			break
		}
		from += int64(len(b) - headerLen + 1)
	}
	f.scanned = max(f.off+1, from)
	return 0, false, nil
}

// ReadSpan reads the sound records of the event file at path that start within
// about n bytes from the first sound record at or after off (the last one read is
// whole), for a glance into a long file without reading all of it: its newest
// steps, or a sample of its history. Corrupt records are skipped silently.
func ReadSpan(path string, off, n int64, fn func(*Event)) error {
	f := NewFile(path)
	if off > 0 {
		fh, err := os.Open(path)
		if err != nil {
			return err
		}
		fi, err := fh.Stat()
		if err != nil {
			fh.Close()
			return err
		}
		f.off = off - 1 // resync looks from the byte after f.off
		start, found, err := f.resync(fh, fi.Size())
		fh.Close()
		if err != nil || !found {
			return err
		}
		f.off, f.scanned = start, 0
	}
	f.limit = f.off + n
	_, err := f.Read(fn, nil)
	return err
}

// Reader follows every event file of one run, including files that appear later:
// those directly in a directory (TensorBoard's notion of a run) or, with recursive,
// those anywhere below it (a Hugging Face output directory's runs/, one
// subdirectory per launch of one training run). Files are read in the order they
// were created, by the Unix time in their names, so a resumed run's newer file
// comes after the older one.
type Reader struct {
	dir       string
	recursive bool
	files     map[string]*File
	order     []*File
	// Warn receives corrupt records; nil drops them.
	Warn func(*CorruptError)
	// Budget bounds the bytes one Read consumes (0: no bound), so that a long
	// history is read in slices, each Read going on where the last stopped.
	Budget int64
}

// NewReader follows the event files in dir (and below it when recursive).
func NewReader(dir string, recursive bool) *Reader {
	return &Reader{dir: dir, recursive: recursive, files: make(map[string]*File)}
}

// Dir is the directory the reader follows.
func (r *Reader) Dir() string { return r.dir }

// Read passes the records appended to the run's files since the previous Read to fn,
// file by file in creation order, and returns how many it passed. It returns
// ErrRewritten when a file was rewritten; the caller starts over with a new Reader.
func (r *Reader) Read(fn func(*Event)) (int, error) {
	paths, err := listEventFiles(r.dir, r.recursive)
	if err != nil {
		return 0, err
	}
	added := false
	for _, p := range paths {
		if r.files[p] == nil {
			f := NewFile(p)
			r.files[p] = f
			r.order = append(r.order, f)
			added = true
		}
	}
	if added {
		slices.SortStableFunc(r.order, func(a, b *File) int { return compareFiles(a.path, b.path) })
	}
	total := 0
	left := r.Budget
	for _, f := range r.order {
		from := f.off
		f.limit = 0
		if r.Budget > 0 {
			f.limit = f.off + left
		}
		n, err := f.Read(fn, r.Warn)
		total += n
		if err != nil {
			return total, err
		}
		if r.Budget > 0 {
			if left -= f.off - from; left <= 0 {
				break
			}
		}
	}
	return total, nil
}

// Files lists the run's event files in the order Read reads them.
func (r *Reader) Files() ([]string, error) {
	paths, err := listEventFiles(r.dir, r.recursive)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(paths, compareFiles)
	return paths, nil
}

// Progress is how many bytes of the run's files Read has consumed, of how many
// they held when last read.
func (r *Reader) Progress() (done, total int64) {
	for _, f := range r.order {
		size := f.size
		if size == 0 { // not opened yet: a Read's budget ran out before it
			if fi, err := os.Stat(f.path); err == nil {
				size = fi.Size()
			}
		}
		done += f.off
		total += max(size, f.off)
	}
	return done, total
}

// compareFiles orders event files by the Unix time in their names
// (events.out.tfevents.<seconds>.<host>…), then by path.
func compareFiles(a, b string) int {
	return cmp.Or(cmp.Compare(fileTime(a), fileTime(b)), strings.Compare(a, b))
}

func fileTime(path string) int64 {
	rest := strings.TrimPrefix(filepath.Base(path), FilePrefix)
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		rest = rest[:i]
	}
	t, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0
	}
	return t
}

// listEventFiles returns the event files in dir, or below it when recursive.
func listEventFiles(dir string, recursive bool) ([]string, error) {
	if !recursive {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			if !e.IsDir() && IsEventFile(e.Name()) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
		return out, nil
	}
	var out []string
	err := walk(dir, func(path string, d fs.DirEntry) {
		if !d.IsDir() && IsEventFile(d.Name()) {
			out = append(out, path)
		}
	})
	return out, err
}

// Walk bounds: a log directory is a few levels of runs; a walk that meets more
// than this was pointed at the wrong place.
const (
	maxDepth   = 6
	maxEntries = 50_000
)

// ErrTooLarge is returned by FindRuns for a tree too large to be a log directory.
var ErrTooLarge = errors.New("too many entries for a log directory")

// walk visits the entries below root, at most maxDepth levels down, skipping hidden
// directories; it fails beyond maxEntries entries.
func walk(root string, visit func(path string, d fs.DirEntry)) error {
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				if errors.Is(err, fs.ErrNotExist) {
					return fs.SkipAll
				}
				return err
			}
			return nil // an unreadable subdirectory holds no run we can read
		}
		if seen++; seen > maxEntries {
			return fmt.Errorf("%s: %w (more than %d)", root, ErrTooLarge, maxEntries)
		}
		if d.IsDir() && path != root {
			if strings.HasPrefix(d.Name(), ".") || depth(root, path) > maxDepth {
				return fs.SkipDir
			}
		}
		visit(path, d)
		return nil
	})
	return err
}

// depth is how many levels below root path is.
func depth(root, path string) int {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}

// FindRuns returns the runs below root, as TensorBoard sees them: every directory
// holding an event file is one run. Paths are relative to root, slash-separated,
// "." for root itself, sorted. It looks at most six levels down.
func FindRuns(root string) ([]string, error) {
	seen := map[string]bool{}
	err := walk(root, func(path string, d fs.DirEntry) {
		if d.IsDir() || !IsEventFile(d.Name()) {
			return
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err == nil {
			seen[filepath.ToSlash(rel)] = true
		}
	})
	if err != nil {
		return nil, err
	}
	runs := make([]string, 0, len(seen))
	for r := range seen {
		runs = append(runs, r)
	}
	slices.Sort(runs)
	return runs, nil
}
