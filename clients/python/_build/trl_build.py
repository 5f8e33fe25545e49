"""A minimal PEP 517 build backend for trl_client, standard library only.

pip runs it from this directory (pyproject's backend-path), so installing
the client needs no network and no setuptools. It builds a pure-Python
wheel of the trl_client package and an sdist of this directory.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "trl_client"


def _meta():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    project = text.split("[project]", 1)[1]

    def field(name):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % name, project, re.M)
        if not m:
            raise RuntimeError("pyproject.toml: [project] %s is missing" % name)
        return m.group(1)

    return field("name"), field("version"), field("description"), field("requires-python")


def _dist_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata():
    name, version, summary, requires = _meta()
    text = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n" % (
        name, version, summary, requires)
    readme = os.path.join(HERE, "README.md")
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            text += "Description-Content-Type: text/markdown\n\n" + f.read()
    return text


def _files():
    root = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                yield os.path.relpath(full, HERE).replace(os.sep, "/"), full


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(wheel_directory, entries):
    name, version = _meta()[:2]
    dist = "%s-%s" % (_dist_name(name), version)
    info = dist + ".dist-info"
    wheel_name = dist + "-py3-none-any.whl"
    files = list(entries)
    files.append((info + "/METADATA", _metadata().encode("utf-8")))
    files.append((info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: trl_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(p, d) for p, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            zi = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data, zipfile.ZIP_DEFLATED)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for rel, full in _files():
        with open(full, "rb") as f:
            entries.append((rel, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # PEP 660: a .pth file that puts this directory on sys.path.
    return _write_wheel(wheel_directory, [("trl_client_editable.pth", (HERE + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    name, version = _meta()[:2]
    base = "%s-%s" % (_dist_name(name), version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        extra = ["pyproject.toml", "README.md", "_build/trl_build.py"]
        for rel in [r for r, _ in _files()] + [e for e in extra if os.path.exists(os.path.join(HERE, e))]:
            tar.add(os.path.join(HERE, rel), arcname=base + "/" + rel, recursive=False)
        pkg = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)).encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg)
        tar.addfile(ti, io.BytesIO(pkg))
    return base + ".tar.gz"
