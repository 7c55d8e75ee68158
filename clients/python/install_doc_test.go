package pythonclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The install steps the docs show, as written. Debian's python3 refuses a
// pip install outside a virtual environment (PEP 668), so every pip install
// the docs show is a venv's; the package's README's steps are run here
// exactly as written (but the apt-get line, which needs root), in a fresh
// directory holding a copy of clients/python, and the package then imports.

// installDocs are the pages that show how to install the package.
var installDocs = []string{"README.md", "../../README.md", "../../docs/example.md", "../../docs/serve.md", "../../docs/trl.md"}

// pipInstall is a pip install of the package: the pip that runs it, as
// written before "pip install" or "-m pip install".
var pipInstall = regexp.MustCompile("(?:^|[\\s`])([^\\s`]*?)(pip3?|\\S+ -m pip) install \\S*clients/python")

func TestDocsInstallIntoAVenv(t *testing.T) {
	for _, doc := range installDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range pipInstall.FindAllStringSubmatch(line, -1) {
				found = true
				if pip := m[1] + m[2]; pip != ".venv/bin/pip" && !strings.HasPrefix(pip, ".venv/bin/python -m") {
					t.Errorf("%s:%d: %q installs outside a venv, which Debian's python3 refuses: %s", doc, i+1, pip, line)
				}
			}
		}
		if !found {
			t.Errorf("%s shows no pip install of the package", doc)
		}
	}
}

// shellBlock is the first ```sh block of a Markdown file, line by line.
func shellBlock(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no ```sh block", path)
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

// debianPython is the interpreter the install steps are written for:
// Debian's, which refuses a pip install outside a virtual environment.
const debianPython = "/usr/bin/python3"

// docsPath is the PATH the install steps run with: Debian's python3's
// directory first where it exists (debian true), so that their `python3` is
// that one and not another interpreter found earlier on PATH; PATH as it is
// elsewhere.
func docsPath() (path string, debian bool) {
	path = os.Getenv("PATH")
	if _, err := os.Stat(debianPython); err != nil {
		return path, false
	}
	return filepath.Dir(debianPython) + string(os.PathListSeparator) + path, true
}

func TestReadmeInstallStepsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a virtual environment")
	}
	path, debian := docsPath()
	if !debian {
		if _, err := exec.LookPath("python3"); err != nil {
			unavailable(t, "no python3 on PATH: the install steps of clients/python/README.md were not tried")
		}
	}
	root := t.TempDir() // the repository's root, as far as the steps go
	if err := os.CopyFS(filepath.Join(root, "clients", "python"), os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, line := range shellBlock(t, "README.md") {
		if strings.HasPrefix(line, "sudo apt-get install") {
			continue // root's, and the machine's: python3-venv is what the venv line needs
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+path, "PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			if strings.Contains(line, "-m venv") && strings.Contains(string(out), "ensurepip") {
				unavailable(t, "%s: %v (install python3-venv)\n%s", line, err, out)
			}
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		ran++
	}
	if ran != 2 {
		t.Fatalf("ran %d steps of clients/python/README.md's first block, want the venv and the pip install", ran)
	}
	if debian {
		cfg, err := os.ReadFile(filepath.Join(root, ".venv", "pyvenv.cfg"))
		if err != nil || !regexp.MustCompile(`(?m)^home = `+regexp.QuoteMeta(filepath.Dir(debianPython))+`$`).Match(cfg) {
			t.Fatalf("the venv is not %s's: %v\n%s", debianPython, err, cfg)
		}
	}
	py := exec.Command(filepath.Join(root, ".venv", "bin", "python"), "-c", "import pixelis, pixelis.sdk; print(pixelis.__file__)")
	py.Dir = root
	out, err := py.CombinedOutput()
	if err != nil || !strings.Contains(string(out), filepath.Join(root, ".venv")) {
		t.Fatalf("the installed package does not import from the venv: %v\n%s", err, out)
	}
}
