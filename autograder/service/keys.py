"""The tool's signing keys: made once, kept on disk readable by the owner only, rotatable.

Every platform that trusts us (Moodle, Canvas...) fetches our public keys from the JWKS
URL and checks the deep-linking responses and AGS client assertions we sign with them.
Rotation adds a new current key and keeps the previous one published for a while, so a
platform that cached the old JWKS can still check what was signed just before.

The folder is the truth, not a process's memory: every process on it (the replicas sharing
a data folder, a running ``serve`` and the ``serve --rotate-key`` beside it) reads the keys
again whenever ``keys.json`` changed, so a rotation reaches every replica's signatures and
JWKS at its next use, without a restart, and no two replicas publish different key sets.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from autograder.exceptions import KeysError
from autograder.formats.atomic import atomic_path, create_once

log = logging.getLogger(__name__)

ALGORITHM = "RS256"
KEY_BITS = 2048
KEPT_AFTER_ROTATION = 2  # the current key and the one before it stay in the JWKS


class ToolKeys:
    """The RSA keys in ``folder`` (one PEM file each, mode 0600) and which one signs.

    ``folder/keys.json`` lists the published keys' ids, the signing key last; it is read
    again whenever it changed (another process rotated the keys).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        # the keys as last read: keys.json's identity (inode, mtime, size), the keys by id, their order
        self._read: tuple[tuple[int, int, int] | None, dict[str, RSAKey], list[str]] = (None, {}, [])
        self._load()
        if not self._read[1]:
            self._make_first()

    def _make_first(self) -> None:
        """The first key, made once however many processes start on this folder at once
        (replicas sharing a data folder): the one whose ``keys.json`` lands first wins, the
        others drop the key they made and read the winner's."""
        key = _new_key()
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        kid = key.kid or ""
        _write_private(self.folder / f"{kid}.pem", key.as_pem(private=True))
        index = json.dumps({"order": [kid]}).encode()
        if create_private_once(self.folder / "keys.json", lambda: index) != index:
            (self.folder / f"{kid}.pem").unlink(missing_ok=True)
        self._load()

    def _identity(self) -> tuple[int, int, int] | None:
        """What tells one ``keys.json`` from the next (each write is a new file renamed into place)."""
        try:
            found = (self.folder / "keys.json").stat()
        except FileNotFoundError:
            return None
        return found.st_ino, found.st_mtime_ns, found.st_size

    def _load(self) -> None:
        identity = self._identity()
        if identity is None:
            return
        try:
            order = json.loads((self.folder / "keys.json").read_text())["order"]
            keys = {kid: RSAKey.import_key((self.folder / f"{kid}.pem").read_bytes(),
                                           parameters={"kid": kid, "alg": ALGORITHM, "use": "sig"})
                    for kid in order}
        except (OSError, ValueError, KeyError) as exc:
            raise KeysError(f"the tool's signing keys in {self.folder} cannot be read ({exc}); restore the folder "
                            "from a backup, or move it away to make new keys (platforms must then re-fetch our JWKS)"
                            ) from exc
        self._read = (identity, keys, list(order))  # one assignment: a reader sees the old or the new

    def _current(self) -> tuple[dict[str, RSAKey], list[str]]:
        """The keys and their order, read again first if ``keys.json`` changed since. A folder
        that cannot be read now (a rotation half-way on a slow volume) leaves the keys as they
        were, and is read again at the next use."""
        if self._identity() != self._read[0]:
            try:
                self._load()
            except KeysError:
                log.warning("the signing keys changed but cannot be read yet; signing with the ones read before",
                            exc_info=True)
        _, keys, order = self._read
        return keys, order

    def rotate(self) -> str:
        """Make a new signing key, keep the previous one published; return the new key id.

        The new index is written before the keys it drops are deleted, so a process reading
        the folder meanwhile finds every key its index names."""
        _, order = self._current()
        key = _new_key()
        kid = key.kid or ""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(self.folder / f"{kid}.pem", key.as_pem(private=True))
        order = [*order, kid]
        kept, dropped = order[-KEPT_AFTER_ROTATION:], order[:-KEPT_AFTER_ROTATION]
        _write_private(self.folder / "keys.json", json.dumps({"order": kept}).encode())
        for old in dropped:
            (self.folder / f"{old}.pem").unlink(missing_ok=True)
        self._load()
        return kid

    @property
    def current_kid(self) -> str:
        return self._current()[1][-1]

    def jwks(self) -> dict[str, Any]:
        """The public JWKS, as served at the tool's JWKS URL."""
        keys, order = self._current()
        return dict(KeySet([keys[kid] for kid in order]).as_dict(private=False))

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact JWT of ``claims`` signed by the current key (``kid`` in the header)."""
        keys, order = self._current()
        return jwt.encode({"alg": ALGORITHM, "kid": order[-1]}, claims, keys[order[-1]])


def _new_key() -> RSAKey:
    """A new signing key, its id the time and its thumbprint."""
    key = RSAKey.generate_key(KEY_BITS, parameters={"alg": ALGORITHM, "use": "sig"}, private=True)
    kid = f"{time.strftime('%Y%m%d%H%M%S', time.gmtime())}-{key.thumbprint()[:12]}"
    return RSAKey.import_key(key.as_pem(private=True), parameters={"kid": kid, "alg": ALGORITHM, "use": "sig"})


def create_private_once(path: Path, make: Callable[[], bytes]) -> bytes:
    """What ``path`` holds, made by ``make`` (mode 0600) if no process made it yet: the
    first of several processes starting on one data folder wins (``atomic.create_once``)."""
    return create_once(path, make, mode=0o600)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` so that only the owner can read it, replacing ``path`` atomically: the
    partial file is made new with mode 0600, so the key is never readable by others."""
    with atomic_path(path) as partial:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
