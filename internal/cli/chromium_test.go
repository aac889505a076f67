package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of Debian's chromium, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install chromium): skipping the browser check of the HTML report")
	}
	return path
}

// dumpDOM opens the page in headless Chromium with the network cut off
// and returns the DOM after loading and what Chromium logged.
func dumpDOM(t *testing.T, page string) (dom, log string) {
	t.Helper()
	bin := chromium(t)
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+abs)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// checkBrowser fails on console messages, script errors and failed loads
// in Chromium's log.
func checkBrowser(t *testing.T, log string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if regexp.MustCompile(`CONSOLE|Uncaught|Failed to load|net::ERR_|Refused to`).MatchString(line) {
			t.Errorf("chromium: %s", line)
		}
	}
}

// figures returns the id of every figure in the DOM and whether it holds
// a rendered SVG chart.
func figures(dom string) map[string]bool {
	out := map[string]bool{}
	re := regexp.MustCompile(`(?s)<figure id="chart-([a-z0-9-]+)">(.*?)</figure>`)
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		out[m[1]] = regexp.MustCompile(`<svg [^>]*class="chart"[^>]*viewBox="0 0 [0-9.]+ [0-9.]+"`).MatchString(m[2]) &&
			strings.Count(m[2], "<path") > 3 && strings.Contains(m[2], "</svg>")
	}
	return out
}

// TestHTMLInChromium renders the report of the example, with a
// re-training comparison, in headless Chromium: no console errors, and
// every chart is in the DOM.
func TestHTMLInChromium(t *testing.T) {
	chromium(t)
	if testing.Short() {
		t.Skip("re-training takes a few seconds")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	code, _, errs := runCmd("--model", exModel, "--data", exTrain, "--test", exTest, "--low", "0", "--high", "10",
		"--retrain", "1", "--out", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	dom, log := dumpDOM(t, page)
	checkBrowser(t, log)
	figs := figures(dom)
	want := []string{"coverage", "width", "calibration", "fan-1", "fan-2", "fan-3", "fan-4", "fan-5", "fan-6", "influence", "gap", "retrain", "leverage"}
	for _, id := range want {
		if ok, found := figs[id]; !found {
			t.Errorf("chart %s is not in the DOM", id)
		} else if !ok {
			t.Errorf("chart %s has no drawn SVG", id)
		}
	}
	if len(figs) != len(want) {
		t.Errorf("%d charts in the DOM, want %d", len(figs), len(want))
	}
	for _, section := range []string{`id="summary"`, `id="warnings"`, `id="retrain"`, `id="settings"`, `id="diagnostics"`} {
		if !strings.Contains(dom, section) {
			t.Errorf("the DOM lacks the section %s", section)
		}
	}
	if os.Getenv("RNNAUDIT_SCREENSHOT") != "" {
		screenshot(t, page, os.Getenv("RNNAUDIT_SCREENSHOT"))
	}
}

// TestEscapedInChromium: ids and column names holding markup are text in
// the browser's DOM, and no element comes from them.
func TestEscapedInChromium(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	train := scriptCSV(t, dir, "train.csv", exTrain)
	test := scriptCSV(t, dir, "test.csv", exTest)
	page := filepath.Join(dir, "r.html")
	code, _, errs := runCmd("--model", exModel, "--data", train, "--test", test,
		"--id-col", "<script>alert('id')</script>", "--target", "<b>glucose</b>", "--features", `<img src=x onerror=alert(1)>`,
		"--out", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	dom, log := dumpDOM(t, page)
	checkBrowser(t, log)
	for _, bad := range []string{"<script", "<img", "<b>"} {
		if i := strings.Index(dom, bad); i >= 0 {
			t.Errorf("the DOM has an element from the data: …%s…", dom[max(0, i-80):min(len(dom), i+80)])
		}
	}
	for _, text := range []string{`&lt;script&gt;alert("1")&lt;/script&gt;`, "&lt;b&gt;glucose&lt;/b&gt;", "&lt;img src=x onerror=alert(1)&gt;"} {
		if !strings.Contains(dom, text) {
			t.Errorf("the DOM does not show %s as text", text)
		}
	}
}

// screenshot saves a picture of the page (RNNAUDIT_SCREENSHOT=path.png).
func screenshot(t *testing.T, page, png string) {
	abs, _ := filepath.Abs(page)
	out, err := filepath.Abs(png)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium(t), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,4000", "--screenshot="+out, "file://"+abs)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("screenshot: %v\n%s", err, b)
	}
}
