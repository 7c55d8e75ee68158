// Package docs holds the project's documentation pages; its tests keep the README and the pages
// linked to each other and the README short enough to read.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is how long the README may grow: a newcomer's page, with the reference in docs/.
const readmeMaxLines = 400

// markdownFiles are the pages whose links are checked: the README and every page of docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md pages found")
	}
	return append([]string{filepath.Join("..", "README.md")}, pages...)
}

// proseLines returns a page's lines, those of fenced code blocks emptied and inline code spans
// blanked, so that neither a `#` comment in a shell example nor a `[x](y)` in code is read as Markdown.
func proseLines(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines = append(lines, "")
			continue
		}
		if fenced {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, codeSpan.ReplaceAllString(line, "``"))
	}
	return lines
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	link     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
)

// anchors returns the fragment identifiers GitHub gives a page's headings: lower case, punctuation
// dropped, spaces as hyphens, a repeated heading numbered -1, -2, ….
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugify(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestLinksResolve fails on a relative link of README.md or docs/*.md whose file does not exist, or
// whose #anchor names no heading of the page it points to.
func TestLinksResolve(t *testing.T) {
	pageAnchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := pageAnchors[path]; ok {
			return a, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		pageAnchors[path] = anchors(string(data))
		return pageAnchors[path], nil
	}
	checked := 0
	for _, page := range markdownFiles(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range proseLines(string(data)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: link %q: %v", page, i+1, target, err)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				a, err := anchorsOf(path)
				if err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
				if !a[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", page, i+1, target, path, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the pattern no longer matches the pages")
	}
}

// TestReadmeIsShort holds the README to readmeMaxLines lines: the reference lives in docs/.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(data), "\n")
	if !strings.HasSuffix(string(data), "\n") {
		n++
	}
	if n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference text to a page of docs/ and link it", n, readmeMaxLines)
	}
}

// TestReadmeTestCommandIsCIs keeps the README's test command the one .ci/run runs.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	const command = "go test ./..."
	if !strings.Contains(string(ci), "\n"+command+"\n") {
		t.Fatalf(".ci/run no longer runs %q on a line of its own", command)
	}
	head := strings.Join(strings.SplitN(string(readme), "\n", 61)[:60], "\n")
	if !strings.Contains(head, "\n"+command+" ") {
		t.Errorf("the README's first 60 lines do not give the test command %q", command)
	}
}

func TestSlugify(t *testing.T) {
	for title, want := range map[string]string{
		"What the default run does, measured":  "what-the-default-run-does-measured",
		"verl and TRL against `pixelis serve`": "verl-and-trl-against-pixelis-serve",
		"Headless, long runs and SSH":          "headless-long-runs-and-ssh",
		"The `[scheduler]` table":              "the-scheduler-table",
		"Watching other trainers' runs":        "watching-other-trainers-runs",
	} {
		if got := slugify(title); got != want {
			t.Errorf("slugify(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestEveryPageIsLinked fails on a page of docs/ that the README does not link, so that no page is
// left where nobody finds it.
func TestEveryPageIsLinked(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, line := range proseLines(string(data)) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[filepath.Clean(filepath.FromSlash(file))] = true
		}
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		if !linked[filepath.Join("docs", page)] {
			t.Errorf("docs/%s is not linked from README.md", page)
		}
	}
}
