package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rnnaudit/rnnaudit/reports"
)

// namedFile is a file the command reads or writes, with the flag (or
// config key) that names it, for messages.
type namedFile struct{ flag, path string }

// checkIdentity refuses an output that is the same file as an input, and
// two outputs that are the same file, however they are named: by the same
// path written differently, through a symbolic link (to the file or to a
// directory on its path) or by a hard link. Files are compared by device
// and inode (os.SameFile); an output that does not exist yet is compared
// with the others by the real path of its directory and its name, since a
// link to it cannot exist either. Writing a report renames a temporary
// file over the output path, so without this check --out train.csv (or
// a link to it) would replace the training data with the report.
func checkIdentity(inputs, outputs []namedFile) error {
	type known struct {
		namedFile
		info fs.FileInfo // nil when the file does not exist
		real string      // real directory + base name, for files that do not exist
	}
	resolve := func(f namedFile) known {
		k := known{namedFile: f}
		if st, err := os.Stat(f.path); err == nil {
			k.info = st
		}
		k.real = filepath.Clean(f.path)
		if abs, err := filepath.Abs(f.path); err == nil {
			k.real = abs
			if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
				k.real = filepath.Join(dir, filepath.Base(abs))
			}
		}
		return k
	}
	same := func(a, b known) bool {
		if a.info != nil && b.info != nil {
			return os.SameFile(a.info, b.info)
		}
		return a.info == nil && b.info == nil && a.real == b.real
	}
	var ins []known
	for _, f := range inputs {
		if f.path != "" {
			ins = append(ins, resolve(f))
		}
	}
	var outs []known
	for _, f := range outputs {
		o := resolve(f)
		// An output that is a symbolic link is replaced, not written
		// through; refuse it when it points at an input all the same.
		if lst, err := os.Lstat(f.path); err == nil && lst.Mode()&fs.ModeSymlink != 0 && o.info == nil {
			o.info = lst
		}
		for _, in := range ins {
			if same(o, in) {
				return usagef("%s %s is the same file as %s %s: writing it would destroy the input; choose another output name", o.flag, o.path, in.flag, in.path)
			}
		}
		for _, prev := range outs {
			if same(o, prev) {
				return usagef("%s %s is the same file as %s %s: each output must be a file of its own", o.flag, o.path, prev.flag, prev.path)
			}
		}
		outs = append(outs, o)
	}
	return nil
}

// checkWritable checks, before the audit runs, that the report o can be
// written: that a file can be made in its directory and, for Markdown,
// that the chart directory is not a file.
func checkWritable(o output) error {
	dir := filepath.Dir(o.path)
	f, err := os.CreateTemp(dir, ".rnnaudit-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: directory %s: %w", o.path, dir, unwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	if o.format == reports.Markdown {
		charts := reports.AssetDir(o.path)
		if st, err := os.Stat(charts); err == nil && !st.IsDir() {
			return fmt.Errorf("cannot write %s: its charts go into %s, which is a file, not a directory: remove it or choose another report name", o.path, charts)
		}
	}
	return nil
}
