"""Build backend: setuptools' own, plus a standard-library wheel writer for when setuptools cannot
build wheels by itself. A fresh Python 3.11 venv has setuptools 65 without the ``wheel`` package,
and setuptools before 70.1 needs it for bdist_wheel, so ``pip install --no-index
--no-build-isolation`` would fail there. This package is pure Python with one top-level package,
which makes its wheel simple enough to write here."""
from __future__ import annotations

import base64
import hashlib
import os
import re
import zipfile
from typing import Any, Dict, List, Optional

from setuptools import build_meta as _setuptools
from setuptools.build_meta import build_sdist, get_requires_for_build_sdist  # noqa: F401

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TAG = "py3-none-any"


def _can_build_wheels() -> bool:
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1)
        return True
    except ImportError:
        pass
    try:
        import wheel.bdist_wheel  # noqa: F401
        return True
    except ImportError:
        return False


def _project() -> Dict[str, str]:
    """name and version from pyproject.toml (tomllib is 3.11+; the values are plain strings)."""
    with open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    found = {k: re.search(rf'^{k}\s*=\s*"([^"]+)"', section, re.M) for k in ("name", "version", "requires-python", "description")}
    return {k: m.group(1) for k, m in found.items() if m}


def _metadata() -> str:
    p = _project()
    with open(os.path.join(_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {p['name']}\nVersion: {p['version']}\nSummary: {p.get('description', '')}\n"
        f"License: Apache-2.0\nRequires-Python: {p.get('requires-python', '>=3.9')}\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )


def _dist_info_name() -> str:
    p = _project()
    return f"{p['name'].replace('-', '_')}-{p['version']}.dist-info"


def _wheel_files() -> Dict[str, bytes]:
    files: Dict[str, bytes] = {}
    src = os.path.join(_ROOT, "src")
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, "po_worker")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    files[os.path.relpath(path, src).replace(os.sep, "/")] = f.read()
    info = _dist_info_name()
    files[f"{info}/METADATA"] = _metadata().encode("utf-8")
    files[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: po_build\nRoot-Is-Purelib: true\nTag: {_TAG}\n".encode()
    files[f"{info}/top_level.txt"] = b"po_worker\n"
    with open(os.path.join(_ROOT, "LICENSE"), "rb") as f:
        files[f"{info}/LICENSE"] = f.read()
    return files


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return _setuptools.get_requires_for_build_wheel(config_settings) if _can_build_wheels() else []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    if _can_build_wheels():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    info = _dist_info_name()
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in _wheel_files().items():
        if name.startswith(info + "/"):
            with open(os.path.join(metadata_directory, name), "wb") as f:
                f.write(data)
    return info


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    if _can_build_wheels():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    p = _project()
    filename = f"{p['name'].replace('-', '_')}-{p['version']}-{_TAG}.whl"
    files = _wheel_files()
    record_name = f"{_dist_info_name()}/RECORD"
    lines = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{name},sha256={digest},{len(data)}")
        lines.append(f"{record_name},,")
        z.writestr(record_name, "\n".join(lines) + "\n")
    return filename
