package onnx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/userfile"
)

// External data: tensors whose values are kept in a file beside the model
// (onnx.save_model(..., save_as_external_data=True), how every model over
// 2 GB and many smaller ones are saved). A TensorProto then holds
// external_data entries: location (the file, relative to the model's
// folder), offset and length (in bytes, optional) and checksum (ignored).
// Load reads them from the model's folder and nowhere else.

// mergeExternal reads one StringStringEntryProto of external_data into
// t.ext.
func (t *tensorMsg) mergeExternal(msg field) error {
	var key, value string
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return err
		}
		if f.wire != wireBytes {
			continue
		}
		switch f.num {
		case 1:
			key, err = f.str()
		case 2:
			value, err = f.str()
		}
		if err != nil {
			return err
		}
	}
	if t.ext == nil {
		t.ext = map[string]string{}
	}
	t.ext[key] = value
	return nil
}

// externalRef is where one tensor's values lie: in file location (as
// written in the model) from byte offset, length bytes.
type externalRef struct {
	tm             *tensorMsg
	what           string // `initializer "W"`, for messages
	offset, length int64
}

// loadExternal reads the values of every tensor of m that keeps them in a
// file into its raw_data, from the folder dir of the model file (model is
// its name, for messages). The files must lie in that folder or below it:
// a location that is absolute, climbs out with "..", or leads out through
// a symbolic link is refused, and the bytes asked for must lie within the
// file (checked against its size before reading). A missing or refused
// file is one problem naming the file and the tensors that need it. With
// dir "" (a model decoded from bytes, not loaded from a file) tensors kept
// outside give one problem per file, saying to load the model from its
// file.
func loadExternal(m *model, dir, modelName string, problems *graph.ErrorList) {
	byFile := map[string][]externalRef{}
	var files []string
	add := func(tm *tensorMsg, what string) {
		if !tm.external && tm.location != 1 {
			return
		}
		ref := externalRef{tm: tm, what: what, length: -1}
		loc := tm.ext["location"]
		var err error
		if v, ok := tm.ext["offset"]; ok {
			if ref.offset, err = strconv.ParseInt(v, 10, 64); err != nil || ref.offset < 0 {
				*problems = append(*problems, fmt.Errorf("%w: %s: external data offset %q is not a byte offset", ErrInvalid, what, v))
				return
			}
		}
		if v, ok := tm.ext["length"]; ok {
			if ref.length, err = strconv.ParseInt(v, 10, 64); err != nil || ref.length < 0 {
				*problems = append(*problems, fmt.Errorf("%w: %s: external data length %q is not a number of bytes", ErrInvalid, what, v))
				return
			}
		}
		if _, seen := byFile[loc]; !seen {
			files = append(files, loc)
		}
		byFile[loc] = append(byFile[loc], ref)
	}
	for _, tm := range m.graph.inits {
		add(tm, fmt.Sprintf("initializer %q", tm.name))
	}
	for i := range m.graph.nodes {
		n := &m.graph.nodes[i]
		for _, a := range n.attrs {
			if a.t != nil {
				add(a.t, fmt.Sprintf("attribute %q of node %q", a.name, n.name))
			}
		}
	}
	for _, loc := range files {
		if err := readExternalFile(dir, modelName, loc, byFile[loc]); err != nil {
			*problems = append(*problems, err)
		}
	}
}

// readExternalFile reads the tensors refs from the external data file loc
// (as the model names it) in the model's folder dir.
func readExternalFile(dir, modelName, loc string, refs []externalRef) error {
	var names []string
	for _, r := range refs {
		names = append(names, strings.TrimPrefix(strings.TrimPrefix(r.what, "initializer "), "attribute "))
	}
	const show = 8
	need := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		need += fmt.Sprintf(" and %d more", len(names)-show)
	}
	tensors, needs := "tensor "+need, "needs"
	if len(refs) > 1 {
		tensors, needs = fmt.Sprintf("%d tensors (%s)", len(refs), need), "need"
	}
	if dir == "" {
		return fmt.Errorf("%w: external data file %q, which %s %s, is read only beside a model loaded from its file", ErrExternalData, loc, tensors, needs)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: external data file %q, which %s %s: %s", ErrExternalData, loc, tensors, needs, fmt.Sprintf(format, args...))
	}
	if loc == "" {
		return fail("the model names no file (external_data has no location)")
	}
	if filepath.IsAbs(loc) || strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, `\`) || filepath.VolumeName(loc) != "" {
		return fail("an absolute path; external data must lie in the model's folder (%s), named relative to it", dir)
	}
	clean := filepath.Clean(filepath.FromSlash(loc))
	if slices.Contains(strings.Split(filepath.ToSlash(clean), "/"), "..") || slices.Contains(strings.Split(filepath.ToSlash(loc), "/"), "..") {
		return fail(`it climbs out with ".."; external data must lie in the model's folder (%s)`, dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail("the model's folder %s: %v", dir, err)
	}
	path := filepath.Join(dir, clean)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: external data file %q, which %s %s, is missing: it must lie beside %s, in %s: copy it there with the model",
				ErrExternalData, loc, tensors, needs, modelName, dir)
		}
		return fail("%v", err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fail("it leads out of the model's folder (%s) through a symbolic link, to %s", dir, real)
	}
	// A regular file only, opened without waiting on a named pipe.
	f, size, err := userfile.Open(real, "", userfile.ExternalData)
	if err != nil {
		var ue *userfile.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail("%v", err)
	}
	defer f.Close()
	for _, r := range refs {
		want, err := r.tm.rawSize()
		if err != nil {
			return fmt.Errorf("%s: %w", r.what, err)
		}
		n := r.length
		if n < 0 {
			n = want
		}
		if n != want {
			return fmt.Errorf("%w: %s: external data length %d bytes, but its type and dims take %d", ErrInvalid, r.what, n, want)
		}
		if r.offset > size || n > size-r.offset {
			return fmt.Errorf("%w: %s: bytes %d to %d of external data file %q, which has %d: the file is shorter than the model says (truncated, or of another export)",
				ErrExternalData, r.what, r.offset, r.offset+n, loc, size)
		}
		raw := make([]byte, n)
		if _, err := f.ReadAt(raw, r.offset); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
			return fail("reading %s: %v", r.what, err)
		}
		r.tm.raw, r.tm.external, r.tm.location, r.tm.ext = raw, false, 0, nil
	}
	return nil
}

// rawSize is the number of bytes of raw_data the tensor's type and dims
// take, checked against the limits of decode.
func (tm *tensorMsg) rawSize() (int64, error) {
	elem := graph.ElemType(tm.dataType)
	size, ok := elemSize[elem]
	if !ok {
		return 0, fmt.Errorf("element type %s is %w", elemName(elem), ErrUnsupported)
	}
	n := int64(1)
	for _, d := range tm.dims {
		if d > maxDim || (d != 0 && n > int64(maxElems)/int64(d)) {
			return 0, fmt.Errorf("%w: dims %v hold too many values", ErrInvalid, errs.Value(tm.dims))
		}
		n *= int64(d)
	}
	return n * int64(size), nil
}
