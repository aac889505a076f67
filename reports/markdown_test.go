package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	files, err := WriteMarkdown(&b, fixture(), "report_files", &Options{Columns: &Columns{ID: "id", Time: "t", Target: "glucose", Features: []string{"dose", "meal"}}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md", b.Bytes())
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if !bytes.HasPrefix(f.Data, []byte("<?xml")) || !bytes.Contains(f.Data, []byte("</svg>")) {
			t.Errorf("%s is not a standalone SVG document", f.Name)
		}
	}
	want := "report_files/coverage.svg report_files/width.svg report_files/calibration.svg report_files/fan-1.svg report_files/fan-2.svg report_files/fan-3.svg report_files/influence.svg report_files/gap.svg report_files/retrain.svg"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("chart files\n got %s\nwant %s", got, want)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	r, o := xssResult()
	var b bytes.Buffer
	if _, err := WriteMarkdown(&b, r, "r_files", o); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, bad := range []string{"<script", "<img", "<b>"} {
		if i := strings.Index(md, bad); i >= 0 {
			t.Errorf("unescaped %q in the Markdown: …%s…", bad, md[max(0, i-60):min(len(md), i+60)])
		}
	}
	if loc := regexp.MustCompile(`[^\\]\]\(javascript:`).FindStringIndex(md); loc != nil {
		t.Errorf("a link survives in the Markdown: …%s…", md[max(0, loc[0]-60):min(len(md), loc[1]+20)])
	}
	if !strings.Contains(md, `&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Error("the markup is not shown as text")
	}
	// Every table row has as many cells as its header: an id with a pipe
	// must not add a column.
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") {
			cells := len(regexp.MustCompile(`[^\\]\|`).FindAllString(line, -1))
			if cells < 2 {
				t.Errorf("odd table row %q", line)
			}
		}
	}
}

// TestWriteFile writes each format through WriteFile and checks that the
// Markdown links point at the chart files it wrote.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"r.html", "r.json", "sub report.md"} {
		path := filepath.Join(dir, name)
		f, err := FormatOf(path)
		if err != nil {
			t.Fatal(err)
		}
		written, err := WriteFile(path, f, fixture(), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if written[0] != path {
			t.Errorf("%s: first file written %s", name, written[0])
		}
		if f != Markdown {
			if len(written) != 1 {
				t.Errorf("%s: wrote %v", name, written)
			}
			continue
		}
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		links := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(string(md), -1)
		if len(links) != 9 || len(written) != 10 {
			t.Fatalf("%d image links, %d files written", len(links), len(written))
		}
		for _, l := range links {
			target := strings.ReplaceAll(l[1], "%20", " ")
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(target))); err != nil {
				t.Errorf("link %s: %v", l[1], err)
			}
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		want Format
	}{
		{"r.html", HTML}, {"R.HTM", HTML}, {"a/b.md", Markdown}, {"x.markdown", Markdown}, {"out.json", JSON},
		{"r.pdf", 0}, {"report", 0}, {"html", 0},
	} {
		got, err := FormatOf(tc.path)
		if got != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("FormatOf(%q) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if got := AssetDir("out/report.md"); got != "out/report_files" {
		t.Errorf("AssetDir = %q", got)
	}
}
