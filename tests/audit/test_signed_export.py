"""A signed export verifies offline with the public key alone (tools/verify_export.py)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from audit import journal, seals
from audit.models import SignedCheckpoint
from audit.tasks import write_journal_checkpoint

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_export.py"


@pytest.fixture
def sealed_twice(write, monkeypatch, settings, tmp_path):
    """Entries in two contours, sealed by the beat, then more entries sealed by the export."""
    settings.GATEWAY_JOURNAL_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    for day in (1, 2):
        moment = datetime(2025, 6, day, 12, 0, tzinfo=UTC)
        monkeypatch.setattr(journal, "_now", lambda moment=moment: moment)
        for n in range(3):
            write(contour="demo", arguments={"n": n, "big": 1e16, "text": 'кавычки " ,'})
            write(contour="shop", tool="create_order", phase="execute")
        if day == 1:
            write_journal_checkpoint()


def _export(tmp_path: Path, *args: str) -> Path:
    out = StringIO()
    call_command("export_journal", "--format", "jsonl", "--signed", *args, stdout=out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def _public_key(tmp_path: Path) -> Path:
    out = StringIO()
    call_command("journal_public_key", stdout=out)
    path = tmp_path / "key.pem"
    path.write_text(out.getvalue())
    return path


def _verify(tmp_path: Path, export: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # Run from a directory of its own with no project on the path: it imports nothing of ours.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTHONPATH"))}
    return subprocess.run(
        [
            sys.executable,
            str(VERIFIER),
            "--public-key",
            str(_public_key(tmp_path)),
            *extra,
            str(export),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_an_intact_export_verifies_offline(sealed_twice, tmp_path):
    export = _export(tmp_path)

    done = _verify(tmp_path, export)

    assert done.returncode == 0, done.stderr
    assert "ok: 12 rows" in done.stdout
    # The beat sealed day 1, the export sealed day 2: two stretches per chain.
    assert SignedCheckpoint.objects.count() == 4


def test_one_contour_export_verifies(sealed_twice, tmp_path):
    done = _verify(tmp_path, _export(tmp_path, "--contour", "shop", "--since", "2025-06-02"))

    assert done.returncode == 0, done.stderr
    assert "ok: 3 rows" in done.stdout


def _rewrite(path: Path, change) -> None:
    lines = _lines(path)
    change(lines)
    path.write_text("".join(lines), encoding="utf-8")


def _row_lines(path: Path) -> list[int]:
    return [i for i, line in enumerate(_lines(path)) if "type" not in json.loads(line)]


def test_an_edited_row_fails_naming_it(sealed_twice, tmp_path):
    export = _export(tmp_path)
    target = _row_lines(export)[4]

    def edit(lines):
        row = json.loads(lines[target])
        row["message"] = "подменено"
        lines[target] = json.dumps(row, ensure_ascii=False) + "\n"

    _rewrite(export, edit)
    done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert f"line {target + 1}:" in done.stderr and "was changed" in done.stderr


def test_a_deleted_row_fails_naming_its_place(sealed_twice, tmp_path):
    export = _export(tmp_path)
    target = _row_lines(export)[1]
    removed = json.loads(_lines(export)[target])
    _rewrite(export, lambda lines: lines.pop(target))

    done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert f"place {removed['seq']} of chain {removed['chain']!r} is missing" in done.stderr


def test_an_added_row_fails(sealed_twice, tmp_path):
    export = _export(tmp_path)
    target = _row_lines(export)[2]
    _rewrite(export, lambda lines: lines.insert(target + 1, lines[target]))

    done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert f"line {target + 2}: row id" in done.stderr


def test_a_cut_tail_fails(sealed_twice, tmp_path):
    export = _export(tmp_path)
    _rewrite(export, lambda lines: lines.__delitem__(slice(-3, None)))

    done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert "missing" in done.stderr


def test_a_whole_stretch_cut_off_the_end_fails_on_the_manifest(sealed_twice, tmp_path):
    export = _export(tmp_path)
    lines = _lines(export)
    last_checkpoint = max(
        i for i, line in enumerate(lines) if json.loads(line).get("type") == "checkpoint"
    )
    _rewrite(export, lambda lines: lines.__delitem__(slice(last_checkpoint, -1)))

    done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert "the manifest" in done.stderr


def test_another_key_does_not_verify(sealed_twice, tmp_path):
    export = _export(tmp_path)
    other = (
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhsc"
        "HR4f\n-----END PRIVATE KEY-----\n"
    )
    with override_settings(GATEWAY_JOURNAL_SIGNING_KEY=other):
        done = _verify(tmp_path, export)

    assert done.returncode == 1
    assert "not one of the public keys given" in done.stderr


def test_a_resealed_stretch_disagrees_with_the_checkpoints_the_auditor_kept(sealed_twice, tmp_path):
    export = _export(tmp_path)
    kept = tmp_path / "kept.jsonl"
    kept.write_text(
        "".join(json.dumps(seals.as_record(c)) + "\n" for c in SignedCheckpoint.objects.all())
    )
    assert _verify(tmp_path, export, "--checkpoints", str(kept)).returncode == 0
    # The operator (who holds the key) signs that stretch anew: valid, but not what was kept.
    lines = _lines(export)
    first = json.loads(lines[0])
    resealed = seals.sign(
        {
            **{k: first[k] for k in seals.SIGNED_FIELDS if k in first},
            "at": "2030-01-01T00:00:00.000000+00:00",
        }
    )
    _rewrite(export, lambda lines: lines.__setitem__(0, json.dumps(resealed) + "\n"))
    _rewrite(
        export,
        lambda lines: lines.__setitem__(
            -1,
            json.dumps(
                seals.sign(
                    {
                        **{
                            k: v
                            for k, v in json.loads(lines[-1]).items()
                            if k in seals.SIGNED_FIELDS
                        },
                        "checkpoints": _carried(lines),
                    }
                )
            )
            + "\n",
        ),
    )

    assert _verify(tmp_path, export).returncode == 0
    done = _verify(tmp_path, export, "--checkpoints", str(kept))

    assert done.returncode == 1
    assert (
        f"kept checkpoint of chain {first['chain']!r} to place {first['to_seq']} is not in "
        "the export" in done.stderr
    )


def _carried(lines: list[str]) -> str:
    import hashlib

    carried = hashlib.sha256()
    for line in lines:
        record = json.loads(line)
        if record.get("type") == "checkpoint":
            carried.update(record["signature"].encode())
    return carried.hexdigest()


def test_the_verifier_imports_nothing_of_the_project():
    tree = ast.parse(VERIFIER.read_text(encoding="utf-8"))
    roots = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    roots |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert roots <= set(sys.stdlib_module_names) | {"cryptography"}, roots


def test_signed_export_refuses_tool_and_csv(sealed_twice):
    with pytest.raises(CommandError, match="--tool and --status do not apply"):
        call_command(
            "export_journal", "--format", "jsonl", "--signed", "--tool", "x", stdout=StringIO()
        )
    with pytest.raises(CommandError, match="use --format jsonl"):
        call_command("export_journal", "--format", "csv", "--signed", stdout=StringIO())


def test_a_tampered_journal_is_not_sealed(sealed_twice, write, raw_sql):
    write(contour="demo")
    raw_sql(
        "UPDATE {table} SET message = %s WHERE id = (SELECT MAX(id) FROM {table})", ["подменено"]
    )

    with pytest.raises(seals.SealError, match="hash does not match"):
        seals.seal()


def test_rotation_keeps_old_checkpoints_verifiable(sealed_twice, tmp_path, write):
    old_key = _public_key(tmp_path).read_text()
    new = (
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhsc"
        "HR4f\n-----END PRIVATE KEY-----\n"
    )
    with override_settings(GATEWAY_JOURNAL_SIGNING_KEY=new):
        write(contour="demo")
        export = _export(tmp_path)
        out = StringIO()
        call_command("journal_public_key", "--all", stdout=out)
        (tmp_path / "old.pem").write_text(old_key)
        done = _verify(tmp_path, export, "--public-key", str(tmp_path / "old.pem"))

    assert done.returncode == 0, done.stderr
    assert out.getvalue().count("BEGIN PUBLIC KEY") == 2


def test_the_beat_sends_new_signed_checkpoints_to_the_auditors(
    write, settings, tmp_path, mailoutbox
):
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[bytes] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 8601), Collector)
    threading.Thread(target=server.handle_request, daemon=True).start()
    settings.GATEWAY_JOURNAL_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    settings.GATEWAY_JOURNAL_CHECKPOINT_EMAILS = ["auditor@example.com"]
    settings.GATEWAY_JOURNAL_CHECKPOINT_WEBHOOK = "http://127.0.0.1:8601/seals"
    write(contour="demo")
    try:
        write_journal_checkpoint()
    finally:
        server.server_close()

    [mail] = mailoutbox
    assert mail.to == ["auditor@example.com"]
    [(_name, body, _)] = mail.attachments
    record = json.loads(body)
    assert record["type"] == "checkpoint" and record["chain"] == "demo"
    assert record["signature"] == SignedCheckpoint.objects.get().signature
    assert received == [body.encode()]
    # Nothing new: nothing sent again.
    write_journal_checkpoint()
    assert len(mailoutbox) == 1
