"""Reading one huge stdout record from Pi: the framer alone, and a fake Pi through ``PiProcess``.

Run: ``.venv/bin/python benchmarks/bench_pi_framing.py [--mb 32 50]``. For each size, one
record of that many MB is fed in 64 KiB reads (what the reader thread gets from the pipe):

- ``framer``: :class:`~pinb.agent.pi.framing.RecordFramer`, which searches only new bytes;
- ``re-split``: the former ``split_records(rest + chunk)`` per read, quadratic (run only
  up to ``--resplit-max`` MB, default 8: at 50 MB it took a minute);
- ``process``: a fake Pi (Python) writes the record then a small one; the time from the
  command to the small record arriving, parse included.

Prints a Markdown table. Timings are the machine's: compare rows within one run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pinb.agent.pi.framing import RecordFramer, split_records
from pinb.agent.pi.rpc import PiProcess

CHUNK = 65536
FAKE = textwrap.dedent(
    r"""
    import json, sys
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        command = json.loads(line)
        if command["type"] == "get_state":
            data = {"sessionFile": sys.argv[-1]}
            out.write(json.dumps({"id": command["id"], "type": "response",
                                  "command": "get_state", "success": True,
                                  "data": data}).encode() + b"\n")
        else:
            size = int(command["size"])
            out.write(b'{"type":"big","x":"' + b"a" * size + b'"}\n{"type":"small"}\n')
        out.flush()
    """
)


def record(mb: int) -> bytes:
    return b'{"type":"big","x":"' + b"a" * (mb * 1_000_000) + b'"}\n'


def framer_seconds(data: bytes) -> float:
    framer = RecordFramer(max_bytes=len(data))
    started = time.perf_counter()
    for start in range(0, len(data), CHUNK):
        framer.feed(data[start : start + CHUNK])
    return time.perf_counter() - started


def resplit_seconds(data: bytes) -> float:
    rest = b""
    started = time.perf_counter()
    for start in range(0, len(data), CHUNK):
        _, rest = split_records(rest + data[start : start + CHUNK])
    return time.perf_counter() - started


def process_seconds(mb: int, folder: Path) -> float:
    script = folder / "fake_pi.py"
    script.write_text(FAKE)
    argv = [sys.executable, str(script), "--", str(folder / "s.jsonl")]
    with PiProcess(argv, session_file=folder / "s.jsonl", cwd=folder) as pi:
        started = time.perf_counter()
        pi.command("big", size=mb * 1_000_000)
        while (got := pi.next_record(timeout=300)) is not None and got["type"] != "small":
            pass
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, nargs="+", default=[32, 50])
    parser.add_argument("--resplit-max", type=int, default=8)
    args = parser.parse_args()
    print("| record | framer | re-split (former) | through PiProcess |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sorted({*args.mb, args.resplit_max}):
            data = record(mb)
            resplit = f"{resplit_seconds(data):.2f} s" if mb <= args.resplit_max else "—"
            print(
                f"| {mb} MB | {framer_seconds(data):.3f} s | {resplit} | "
                f"{process_seconds(mb, Path(tmp)):.2f} s |"
            )


if __name__ == "__main__":
    main()
