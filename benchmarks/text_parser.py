"""Text parser throughput: adapters.text.parser.parse() on the test corpus and on 1 MB replies."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import CpuMeter, bench_database, md_table, save, setup_django

MB = 1024 * 1024
ORDER_ID = "017f038f-c78b-736d-dc00-8bce30bd0f9f"
PROSE = (
    "Проверю счёт и сверю суммы по позициям, затем отвечу клиенту. Сумма к оплате "
    "указана в копейках строкой, НДС считается от полной стоимости. "
)


def _call(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _fill(size: int, unit: str) -> str:
    return (unit * (size // len(unit.encode()) + 1))[:size]


def replies(size: int) -> dict[str, str]:
    """Replies of about `size` bytes (UTF-8) in the shapes that stress the parser differently."""
    get = _call("get_order", {"order_id": ORDER_ID})
    prose = _fill(size, PROSE)
    step = len(prose) // 9
    with_calls = "".join(prose[i * step : (i + 1) * step] + "\n" + get + "\n" for i in range(8))
    with_calls += prose[8 * step :]
    big_arg = _call("find_orders", {"merchant_order_id": _fill(size, "счёт-")})
    lookalike = '{"name": "get_order", "arguments": {"order_id": "' + ORDER_ID + '"}} и ещё '
    block = get + "\n"
    return {
        "prose + 8 calls": with_calls,
        "one call, 1 argument of the whole size": big_arg,
        "unclosed <tool_call> + junk to the end": '<tool_call>\n{"name": "get_order", '
        '"arguments": {' + _fill(size, "ю: [1, "),
        "untagged look-alike calls throughout": _fill(size, PROSE[:60] + lookalike),
        "back-to-back <tool_call> blocks": _fill(size, block),
        "<think> of the whole size, then 1 call": "<think>" + prose + "</think>\n" + get,
    }


def _best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def run(args: argparse.Namespace) -> dict[str, Any]:
    from adapters.text.parser import parse
    from harness.text_corpus import CASES

    texts = [case.text for case in CASES]
    corpus_bytes = sum(len(t.encode()) for t in texts)
    for text in texts:  # warm-up: regexes compiled, catalog names cached
        parse(text)
    per_case = []
    with CpuMeter() as corpus_load:
        rounds, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            for text in texts:
                parse(text)
            rounds += 1
        corpus_elapsed = time.perf_counter() - start
        for case in CASES:
            seconds, _ = _best_of(lambda t=case.text: parse(t), 50)
            per_case.append((seconds, case.id, len(case.text.encode())))
    per_case.sort(reverse=True)
    corpus = {
        "cases": len(texts),
        "bytes": corpus_bytes,
        "rounds": rounds,
        "replies_per_s": round(rounds * len(texts) / corpus_elapsed),
        "mb_per_s": round(rounds * corpus_bytes / corpus_elapsed / MB, 2),
        "median_case_us": round(statistics.median(s for s, _, _ in per_case) * 1e6, 1),
        "slowest": [
            {"case": cid, "us": round(s * 1e6, 1), "bytes": size} for s, cid, size in per_case[:3]
        ],
        "cpu": corpus_load.result,
    }
    big = []
    sizes = [int(float(x) * MB) for x in args.sizes.split(",")]
    for size in sizes:
        for shape, text in replies(size).items():
            seconds, parsed = _best_of(lambda t=text: parse(t), args.repeat)
            actual = len(text.encode())
            big.append(
                {
                    "shape": shape,
                    "bytes": actual,
                    "ms": round(seconds * 1000, 2),
                    "mb_per_s": round(actual / seconds / MB, 1),
                    "candidates": len(parsed.candidates),
                    "calls": len(parsed.calls),
                }
            )
    return {"corpus": corpus, "large": big, "sizes_mb": args.sizes}


def render(data: dict[str, Any]) -> str:
    c = data["corpus"]
    slowest = ", ".join(f"{s['case']} {s['us']} µs" for s in c["slowest"])
    out = [
        f"Corpus (`harness/text_corpus.py`): {c['cases']} replies, {c['bytes']:,} bytes; "
        f"**{c['replies_per_s']:,} replies/s**, {c['mb_per_s']} MB/s, median "
        f"{c['median_case_us']} µs per reply; slowest: {slowest}. CPU: machine "
        f"{c['cpu']['machine_busy_pct']} %, others {c['cpu']['others_pct']} % of a core.",
        "",
    ]
    rows = [
        [r["shape"], f"{r['bytes'] / MB:.2f}", r["ms"], r["mb_per_s"], r["candidates"], r["calls"]]
        for r in data["large"]
    ]
    out.append(md_table(["large reply", "MB", "ms (median)", "MB/s", "candidates", "calls"], rows))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time spent on the corpus")
    parser.add_argument("--sizes", default="0.5,1,2", help="large reply sizes in MB")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("sqlite", "text") as url:
        setup_django(url, migrate=False)  # the parser reads no table
        data = run(args)
    save("text_parser", data, render(data), started)


if __name__ == "__main__":
    main()
