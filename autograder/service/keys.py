"""The tool's signing keys: made once, kept on disk readable by the owner only, rotatable.

Every platform that trusts us (Moodle, Canvas...) fetches our public keys from the JWKS
URL and checks the deep-linking responses and AGS client assertions we sign with them.
Rotation adds a new current key and keeps the previous one published for a while, so a
platform that cached the old JWKS can still check what was signed just before.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from autograder.exceptions import KeysError
from autograder.formats.atomic import atomic_path, create_once

ALGORITHM = "RS256"
KEY_BITS = 2048
KEPT_AFTER_ROTATION = 2  # the current key and the one before it stay in the JWKS


class ToolKeys:
    """The RSA keys in ``folder`` (one PEM file each, mode 0600) and which one signs.

    ``folder/current`` names the signing key's id; the others are still published.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._keys: dict[str, RSAKey] = {}
        self._order: list[str] = []
        self._load()
        if not self._keys:
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

    def _load(self) -> None:
        if not self.folder.exists():
            return
        index = self.folder / "keys.json"
        if not index.exists():
            return
        try:
            order = json.loads(index.read_text())["order"]
            for kid in order:
                pem = (self.folder / f"{kid}.pem").read_bytes()
                self._keys[kid] = RSAKey.import_key(pem, parameters={"kid": kid, "alg": ALGORITHM, "use": "sig"})
        except (OSError, ValueError, KeyError) as exc:
            raise KeysError(f"the tool's signing keys in {self.folder} cannot be read ({exc}); restore the folder "
                            "from a backup, or move it away to make new keys (platforms must then re-fetch our JWKS)"
                            ) from exc
        self._order = list(order)

    def rotate(self) -> str:
        """Make a new signing key, keep the previous one published; return the new key id."""
        key = _new_key()
        kid = key.kid or ""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(self.folder / f"{kid}.pem", key.as_pem(private=True))
        self._keys[kid] = key
        self._order.append(kid)
        for old in self._order[:-KEPT_AFTER_ROTATION]:
            del self._keys[old]
            (self.folder / f"{old}.pem").unlink(missing_ok=True)
        self._order = self._order[-KEPT_AFTER_ROTATION:]
        _write_private(self.folder / "keys.json", json.dumps({"order": self._order}).encode())
        return kid

    @property
    def current_kid(self) -> str:
        return self._order[-1]

    def jwks(self) -> dict[str, Any]:
        """The public JWKS, as served at the tool's JWKS URL."""
        return dict(KeySet([self._keys[kid] for kid in self._order]).as_dict(private=False))

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact JWT of ``claims`` signed by the current key (``kid`` in the header)."""
        return jwt.encode({"alg": ALGORITHM, "kid": self.current_kid}, claims, self._keys[self.current_kid])


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
