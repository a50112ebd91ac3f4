"""The tool's signing keys: made once and kept private, the same after a restart, rotatable
without breaking what platforms cached, a rotation seen by every process on the folder."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.errors import BadSignatureError
from joserfc.jwk import KeySet, RSAKey

from autograder.exceptions import KeysError
from autograder.service.keys import ToolKeys


def test_keys_are_made_once_private_and_reused(tmp_path: Path) -> None:
    keys = ToolKeys(tmp_path / "keys")
    files = sorted((tmp_path / "keys").iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    again = ToolKeys(tmp_path / "keys")
    assert again.current_kid == keys.current_kid and again.jwks() == keys.jwks()
    assert all("d" not in key for key in keys.jwks()["keys"])  # only public parts are published


def test_rotation_signs_with_the_new_key_and_still_publishes_the_old(tmp_path: Path) -> None:
    keys = ToolKeys(tmp_path / "keys")
    old_kid = keys.current_kid
    signed_before = keys.sign({"iss": "tool", "n": 1})
    new_kid = keys.rotate()
    published = KeySet.import_key_set(keys.jwks())
    assert new_kid != old_kid and {k["kid"] for k in keys.jwks()["keys"]} == {old_kid, new_kid}
    assert jwt.decode(signed_before, published).claims["n"] == 1
    signed_after = keys.sign({"n": 2})
    assert jwt.decode(signed_after, published).header["kid"] == new_kid
    keys.rotate()
    assert old_kid not in {k["kid"] for k in ToolKeys(tmp_path / "keys").jwks()["keys"]}
    assert not (tmp_path / "keys" / f"{old_kid}.pem").exists()


def test_a_rotation_by_one_process_reaches_every_other_on_the_folder_at_its_next_use(tmp_path: Path) -> None:
    """Replicas on one data folder (or a running ``serve`` and ``serve --rotate-key``): each
    holds its own ``ToolKeys``; one rotates, and the others sign with the new key and
    publish the same key set at once, without a restart."""
    replica, rotator = ToolKeys(tmp_path / "keys"), ToolKeys(tmp_path / "keys")
    old_kid = replica.current_kid
    new_kid = rotator.rotate()
    assert replica.jwks() == rotator.jwks() and [k["kid"] for k in replica.jwks()["keys"]] == [old_kid, new_kid]
    signed = replica.sign({"n": 1})
    assert jwt.decode(signed, KeySet.import_key_set(rotator.jwks())).header["kid"] == new_kid
    newest = rotator.rotate()
    assert [k["kid"] for k in replica.jwks()["keys"]] == [new_kid, newest] and replica.current_kid == newest


def test_a_token_signed_by_another_key_under_our_key_id_does_not_verify(tmp_path: Path) -> None:
    ours = ToolKeys(tmp_path / "a")
    forged = jwt.encode({"alg": "RS256", "kid": ours.current_kid}, {"x": 1},
                        RSAKey.generate_key(2048, private=True))
    with pytest.raises(BadSignatureError):
        jwt.decode(forged, KeySet.import_key_set(ours.jwks()))


def test_a_damaged_key_folder_is_reported_not_replaced(tmp_path: Path) -> None:
    keys = ToolKeys(tmp_path / "keys")
    (tmp_path / "keys" / f"{keys.current_kid}.pem").write_text("not a key")
    with pytest.raises(KeysError, match="cannot be read"):
        ToolKeys(tmp_path / "keys")


def test_a_key_write_that_fails_leaves_no_partial_copy_beside_the_keys(tmp_path: Path) -> None:
    keys = ToolKeys(tmp_path / "keys")
    (tmp_path / "keys" / "keys.json").unlink()
    (tmp_path / "keys" / "keys.json").mkdir()  # the index cannot be replaced: the rotation fails there
    with pytest.raises(OSError):
        keys.rotate()
    left = sorted(p.name for p in (tmp_path / "keys").iterdir())
    assert [name for name in left if not name.endswith(".pem")] == ["keys.json"]
