"""The build backend of the pixelis package (PEP 517), in the source tree.

pip builds a package in an isolated environment into which it first installs
the build backend the package names, from a package index. The machines
pixelis trains on often reach none, so the package names this backend, which
pip finds through `backend-path` in pyproject.toml: `pip install
./clients/python` then needs nothing from the network. It is small because
the package is: pure Python, no compiled parts, no dependencies. It builds a
wheel (and an sdist) holding the `pixelis` package and the `pixelis_client`
compatibility module, and an editable wheel (`pip install -e`) that points
at the source tree.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

NAME = "pixelis"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["pixelis_client.py"]  # top-level modules beside the package
PACKAGE = "pixelis"
SUMMARY = "Client, vector environment and SDK of pixelis: its pixel world and reward over HTTP (pixelis serve)"


def _version():
    with open(os.path.join(HERE, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("pixelis/__init__.py has no __version__")
    return m.group(1)


def _extras():
    """[project.optional-dependencies] of pyproject.toml, the one list of the
    extras: {name: [requirement, ...]} (read by hand: tomllib is 3.11's, and
    the section holds only lines of the form name = ["req", ...])."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    _, _, section = text.partition("\n[project.optional-dependencies]\n")
    section = section.split("\n[", 1)[0]
    out = {}
    for m in re.finditer(r'^([A-Za-z0-9_.-]+)\s*=\s*\[(.*)\]\s*$', section, re.M):
        out[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
    return out


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    extras = "".join("Provides-Extra: %s\n" % name + "".join('Requires-Dist: %s; extra == "%s"\n' % (req, name) for req in reqs)
                     for name, reqs in _extras().items())
    return (
        "Metadata-Version: 2.1\n"
        "Name: %s\nVersion: %s\nSummary: %s\n"
        "Requires-Python: >=3.8\n%s"
        "Description-Content-Type: text/markdown\n\n%s" % (NAME, _version(), SUMMARY, extras, readme)
    )


def _files():
    """(archive name, path) of every file the package ships."""
    out = [(m, os.path.join(HERE, m)) for m in MODULES]
    for root, dirs, files in os.walk(os.path.join(HERE, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py") or f == "py.typed":
                path = os.path.join(root, f)
                out.append((os.path.relpath(path, HERE).replace(os.sep, "/"), path))
    return out


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=" + digest


def _wheel(wheel_directory, entries):
    """Write a wheel of entries [(name, bytes)] and return its file name."""
    version = _version()
    dist_info = "%s-%s.dist-info" % (NAME, version)
    wheel_meta = "Wheel-Version: 1.0\nGenerator: pixelis_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = entries + [
        (dist_info + "/METADATA", _metadata().encode("utf-8")),
        (dist_info + "/WHEEL", wheel_meta.encode("utf-8")),
    ]
    record = "".join("%s,%s,%d\n" % (n, _record_hash(b), len(b)) for n, b in entries)
    record += dist_info + "/RECORD,,\n"
    name = "%s-%s-py3-none-any.whl" % (NAME, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in entries:
            z.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), b)
        z.writestr(zipfile.ZipInfo(dist_info + "/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), record)
    return name


# -- PEP 517 hooks ----------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for name, path in _files():
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    return _wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts the source tree on sys.path: edits take effect at once.
    return _wheel(wheel_directory, [("_pixelis_editable.pth", (HERE + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    extra = ["pyproject.toml", "README.md", "_build/pixelis_build.py"]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arc, path in _files() + [(e, os.path.join(HERE, e)) for e in extra]:
            t.add(path, arcname=base + "/" + arc)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode("utf-8")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
