package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/internal/userfile"
)

// Options add to a report what the audit.Result does not hold. A nil
// *Options, or the zero value, is valid.
type Options struct {
	// Columns names the data columns the audit read (shown in the settings
	// and written to the JSON); nil leaves them out.
	Columns *Columns
	// Command is the command line that produced the result, shown in the
	// settings of the HTML and Markdown reports ("" leaves it out).
	Command string
	// ParamRoles says what each parameter tensor is, by name, such as
	// `W of RNN node "/rnn/RNN"` for the exporter's name onnx::RNN_40
	// (onnx.ParamRole); the HTML and Markdown settings show it beside the
	// name. Names without an entry are shown alone.
	ParamRoles map[string]string
	// Timings adds the wall time of each phase of the audit to the JSON,
	// as a "timings" object. It is off by default so that the same inputs
	// and seed give byte-identical JSON; the HTML and Markdown reports
	// always show the times.
	Timings bool
	// FanCharts chooses the evaluated sequences drawn as fan charts (the
	// zero value: up to DefaultFanCharts, ParseFanCharts reads the
	// --fan-charts flag).
	FanCharts FanSelection
	// ToolVersion names the rnnaudit that wrote the report, shown in the
	// settings and the footer of the HTML and Markdown reports ("" leaves
	// it out).
	ToolVersion string
}

// Columns names the columns of the data files.
type Columns struct {
	ID       string   `json:"id"`              // the sequence id column
	Time     string   `json:"time"`            // the step column
	Target   string   `json:"target"`          // the target column
	Features []string `json:"features"`        // the feature columns, in model order
	Shift    int      `json:"shift,omitempty"` // target of row t taken from row t+Shift
}

// DefaultFanCharts is the number of fan charts FanAuto draws by default.
const DefaultFanCharts = 6

func (o *Options) fans() FanSelection {
	if o == nil {
		return FanSelection{}
	}
	return o.FanCharts
}

// toolVersion is o.ToolVersion, or "".
func (o *Options) toolVersion() string {
	if o == nil {
		return ""
	}
	return o.ToolVersion
}

// target is the name of the target column, or "value".
func (o *Options) target() string {
	if o == nil || o.Columns == nil || o.Columns.Target == "" {
		return "value"
	}
	return o.Columns.Target
}

// Format is a report format.
type Format int

// Report formats.
const (
	// HTML is one self-contained page with inline SVG charts.
	HTML Format = iota + 1
	// Markdown is a page of tables with the charts as SVG files beside it.
	Markdown
	// JSON is the machine-readable result (see the package documentation).
	JSON
	// CSV is every interval, one row per forecast (WriteCSV).
	CSV
)

// String returns "html", "markdown", "json" or "csv".
func (f Format) String() string {
	switch f {
	case HTML:
		return "html"
	case Markdown:
		return "markdown"
	case JSON:
		return "json"
	case CSV:
		return "csv"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ErrFormat is wrapped by the error of FormatOf for a file name whose
// extension names no report format.
var ErrFormat = errors.New("unknown report format")

// FormatOf returns the format named by the extension of path: .html or
// .htm, .md or .markdown, .json, .csv (in any case). Otherwise the error wraps
// ErrFormat.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm":
		return HTML, nil
	case ".md", ".markdown":
		return Markdown, nil
	case ".json":
		return JSON, nil
	case ".csv":
		return CSV, nil
	}
	return 0, fmt.Errorf("reports: %s: %w: the extension must be .html, .md, .json or .csv", path, ErrFormat)
}

// AssetDir returns the directory in which WriteFile puts the charts of a
// Markdown report written to path: the file name without its extension,
// followed by "_files" ("out/report.md" gives "out/report_files").
func AssetDir(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + "_files"
}

// WriteFile writes the report of r to path in format f (FormatOf gives
// the format a file name asks for). A Markdown report also writes its
// charts as SVG files into AssetDir(path), which it creates. Each file is
// written to a temporary file first and renamed, so that a failure leaves
// no partial report. It returns the paths written, the report first.
func WriteFile(path string, f Format, r *audit.Result, o *Options) ([]string, error) {
	var buf bytes.Buffer
	var err error
	var assets []File
	switch f {
	case HTML:
		err = WriteHTML(&buf, r, o)
	case JSON:
		err = WriteJSON(&buf, r, o)
	case CSV:
		err = WriteCSV(&buf, r, o)
	default:
		return nil, fmt.Errorf("reports: %s: %w", path, ErrFormat)
	case Markdown:
		dir := AssetDir(path)
		assets, err = WriteMarkdown(&buf, r, filepath.Base(dir), o)
		if err == nil && len(assets) > 0 {
			if err = os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("reports: cannot write the charts of %s into %s: %w", path, dir, fileCause(err))
			}
			for i := range assets {
				assets[i].Name = filepath.Join(filepath.Dir(path), filepath.FromSlash(assets[i].Name))
			}
		}
	}
	if err != nil {
		return nil, err
	}
	// The charts first, the report last: a failure leaves no report that
	// links to charts that are not there, and removes the charts written.
	var written []string
	for _, a := range assets {
		if err := writeAtomic(a.Name, a.Data); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return nil, err
		}
		written = append(written, a.Name)
	}
	if err := writeAtomic(path, buf.Bytes()); err != nil {
		for _, w := range written {
			os.Remove(w)
		}
		return nil, err
	}
	return append([]string{path}, written...), nil
}

// File is a file that goes with a report: its name (a slash-separated
// path relative to the report) and its contents.
type File struct {
	Name string // slash-separated, relative to the report's directory
	Data []byte // the file's contents
}

// writeAtomic writes data to path through userfile.WriteAtomic: on
// Linux an unnamed temporary file linked into place, so that a run
// killed while writing (kill -9) leaves nothing behind; elsewhere a
// temporary file beside path, renamed, which the next write of path
// removes if a killed run left it. Its errors name path, never the
// temporary file.
func writeAtomic(path string, data []byte) error {
	err := userfile.WriteAtomic(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err == nil {
		return nil
	}
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		return fmt.Errorf("reports: cannot write %s: it is a directory", path)
	}
	return fmt.Errorf("reports: cannot write %s: %w", path, err)
}

// fileCause is the cause of a file system error without the operation
// and the file name.
func fileCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteSummary writes a few lines of plain text for a terminal: the
// headline, the verdict on coverage, the other key numbers, the advice
// on the block scheme when the scheme in use does not fit, and every
// warning.
func WriteSummary(w io.Writer, r *audit.Result) error {
	var b strings.Builder
	b.WriteString(headline(r) + "\n")
	_, v := verdict(r)
	b.WriteString(v + "\n")
	if s := subline(r); s != "" {
		b.WriteString(s + "\n")
	}
	if _, rec := recommendation(r); rec != "" {
		b.WriteString(rec + "\n")
	}
	if s := schemeLine(r); s != "" {
		b.WriteString(s + "\n")
	}
	for _, l := range adaptiveSummaryLines(r) {
		b.WriteString(l + "\n")
	}
	for _, x := range warnings(r) {
		b.WriteString("warning: " + x + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
