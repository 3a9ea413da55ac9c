"""SHA-256 check of the data files vendored with parley.

The public data sets ship inside the package (``scenarios/datasets/data``) so a fresh
machine needs no network. Their digests are recorded here; every load verifies the file
first, so an altered or truncated copy fails loudly instead of silently changing results.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from parley.protocols.errors import DatasetError, InternalError

__all__ = ["DATA_DIR", "EXPECTED_SHA256", "MSG_ALTERED", "MSG_MISSING", "sha256_of", "verify"]

DATA_DIR = Path(__file__).resolve().parent / "data"

# Digests of the files as vendored (sources: the parley.scenarios.datasets module docstring).
EXPECTED_SHA256: dict[str, str] = {
    "adult.data.gz": "17d54d261040d3301495fe44932cb3d244c56468004f2b945a6d8fcf30828bfa",
    "adult.test.gz": "61ec5494b184c38ee9aa225a69e4504f5438f7875c6c01a8d92c9122cb4cc2d6",
    "compas-scores-two-years.csv.gz": "33396575ca500e85dc6a0b1d9d1d913ba7e2b39ccb590beede8ab11374624fcb",
    "communities.data.gz": "56018c09158ea0af5a9d6bf4f645a3c7a39e8efc75b881c6183f942b2f26fdbf",
    "communities.names": "80914f24ab37261fb0fbda7e417cad8001335dadda4a8d702c265601ef8434fc",
    "german.data.gz": "dfec493d374803a9fe773b6f9c859de863bb49eaabb2a1984bd3b97d40b4cf7b",
    "german_values_maps.json": "73a48f120cdb8019fb9f0ad84078ef1ba109f1100bbcc6cbcf925d60e6adcd4e",
}

MSG_ALTERED = (
    "vendored data file {file} has been altered: expected SHA-256 {expected}, "
    "found {actual}; reinstall parley or restore the file"
)
MSG_MISSING = (
    "vendored data file {file} is missing: expected SHA-256 {expected}, "
    "found no file; reinstall parley or restore the file"
)


def sha256_of(path: Path) -> str:
    """Return the hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(name: str, directory: Path | None = None) -> Path:
    """Check a vendored file against its recorded digest and return its path.

    Parameters
    ----------
    name : str
        File name, a key of :data:`EXPECTED_SHA256`.
    directory : pathlib.Path, optional
        Folder to look in; defaults to :data:`DATA_DIR` (tests point it elsewhere).

    Returns
    -------
    pathlib.Path
        The verified file.

    Raises
    ------
    DatasetError
        If the file is missing or its digest differs; the message names the file and
        both digests.
    """
    try:
        expected = EXPECTED_SHA256[name]
    except KeyError:
        raise InternalError(f"no recorded digest for vendored file {name!r}") from None
    path = (DATA_DIR if directory is None else Path(directory)) / name
    if not path.is_file():
        raise DatasetError(MSG_MISSING.format(file=path, expected=expected))
    actual = sha256_of(path)
    if actual != expected:
        raise DatasetError(MSG_ALTERED.format(file=path, expected=expected, actual=actual))
    return path
