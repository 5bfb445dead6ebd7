"""run-judge's throughput against an OpenAI-compatible server that answers every call in 100 ms.

    python bench/judge_throughput.py                         # N = 1, 8, 32, 64, three repetitions
    python bench/judge_throughput.py --concurrency 64 --reps 1 --profile

With N calls in flight and every reply taking ``--delay`` seconds, no client can do better than
N / delay calls a second: the bound. The server (its own process, asyncio, HTTP/1.1 keep-alive)
answers each chat completion after ``--delay`` seconds whatever the load, and counts how many
requests it held at once. Measured in the same run, on the same server, each N in turn:

- ``plain``: a bare asyncio client (N connections kept alive, one request at a time each, the
  reply's JSON parsed): what this machine and this server give a client with next to no
  per-call work. On a machine shared with other work, the bound is not reachable by anyone;
  this line says how far from it the machine itself is.
- ``openai``: the ``openai`` async client alone, as goldpool calls it (one client on the HTTP
  client goldpool hands it, ``labeler.judges.transport.http_client``: openai's aiohttp transport
  when aiohttp is installed; its request to /chat/completions with the reply raw, the JSON
  read), in a child process: what the library costs with no goldpool around it.
- ``goldpool``: ``run_judge`` over a synthetic project (``--calls`` pool entries, relevance,
  progress bar on, written to a file whose size is reported), in a child process whose CPU
  time per verdict is reported.

Reported per N: calls a second over the bound for each client (median of the repetitions, and
their range), goldpool over plain (the ratio that the issue's target, 0.9, is read against on
a shared machine), the most requests the server held at once, goldpool's CPU milliseconds per
verdict and the bytes its progress bar wrote. Then the same rates counted at the server
(``steady``: requests answered a second from the first request's arrival to the last reply, over
the bound), which leave out each client's start-up and shut-down: a cell is short (2.5 s at the
bound), so a fixed start-up cost lowers the first rates and not these. ``imports s``: goldpool's
imports (run_judge's modules, openai, tenacity); ``set-up s``: from then to the first request at
the server (the project read, the Endpoint, run_judge's plan, worker processes started).
``--profile`` prints the top of a cProfile of one goldpool run at the largest N (own time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# --- the server --------------------------------------------------------------------------------

def serve(port_out: multiprocessing.Queue, delay: float, stats: multiprocessing.Queue) -> None:
    """An OpenAI-compatible chat server answering each request after ``delay`` seconds."""

    # ``window``: requests answered since the last /stats, ``first`` the time.time() the first of
    # them arrived, ``last`` the time the last reply was written: the rate counted at the server.
    state = {"in_flight": 0, "most": 0, "served": 0, "window": 0, "first": None, "last": None}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = json.loads(await reader.readexactly(length)) if length else {}
                if head.startswith(b"GET /stats"):
                    payload = json.dumps(state).encode()
                    state.update(most=0, window=0, first=None, last=None)
                else:
                    if state["first"] is None:
                        state["first"] = time.time()
                    state["in_flight"] += 1
                    state["most"] = max(state["most"], state["in_flight"])
                    await asyncio.sleep(delay)
                    state["in_flight"] -= 1
                    state["served"] += 1
                    state["window"] += 1
                    words = len(body["messages"][-1]["content"].split())
                    payload = json.dumps({
                        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "2"}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": words, "completion_tokens": 1, "total_tokens": words + 1},
                    }).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                await writer.drain()
                if not head.startswith(b"GET /stats"):
                    state["last"] = time.time()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def server_stats(port: int) -> dict:
    """The server's counters (and its window reset: most in flight, requests answered, first and last)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/stats")
    data = json.loads(conn.getresponse().read())
    conn.close()
    return data


def steady(stats: dict) -> float:
    """Requests answered a second at the server, from the first request's arrival to the last reply
    (a client's start-up and shut-down left out)."""
    span = (stats["last"] or 0) - (stats["first"] or 0)
    return stats["window"] / span if span > 0 else float("nan")


def at_server(port: int, run):
    """``run()`` between two reads of the server's counters: its result and the server's window."""
    server_stats(port)
    result = run()
    return result, server_stats(port)


# --- the plain client ----------------------------------------------------------------------------

async def _plain(port: int, concurrency: int, calls: int) -> float:
    left = [calls]
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "grade this passage " * 40}],
                       "max_tokens": 16, "temperature": 0}).encode()
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while left[0] > 0:
            left[0] -= 1
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line[15:]) for line in head.split(b"\r\n") if line[:15].lower() == b"content-length:")
            json.loads(await reader.readexactly(length))
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return calls / (time.perf_counter() - start)


def plain_rate(port: int, concurrency: int, calls: int) -> float:
    return asyncio.run(_plain(port, concurrency, calls))


# --- the openai client alone ------------------------------------------------------------------------

def openai_child(port: int, concurrency: int, calls: int, out: multiprocessing.Queue) -> None:
    """The ``openai`` async client alone, as goldpool calls it (one client, its request to
    /chat/completions with the reply raw, the reply's JSON read), ``concurrency`` calls in flight:
    calls a second and CPU seconds per call."""
    import openai

    from labeler.judges.client import MAX_REPLY_BYTES
    from labeler.judges.transport import http_client, response_type

    response = response_type(openai)

    async def run() -> float:
        client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="bench", max_retries=0,
                                    http_client=http_client(openai, MAX_REPLY_BYTES, concurrency))
        body = {"model": "bench", "messages": [{"role": "user", "content": "grade this passage " * 40}],
                "max_tokens": 16, "temperature": 0}
        left = [calls]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                json.loads((await client.post("/chat/completions", cast_to=response, body=body)).content)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - start
        await client.close()
        return wall

    cpu = time.process_time()
    wall = asyncio.run(run())
    out.put({"rate": calls / wall, "cpu_ms": 1000 * (time.process_time() - cpu) / calls})


def openai_rate(port: int, concurrency: int, calls: int) -> dict:
    out: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=openai_child, args=(port, concurrency, calls, out))
    child.start()
    result = out.get(timeout=600)
    child.join(timeout=60)
    return result


# --- goldpool --------------------------------------------------------------------------------------

def make_project(path: Path, n: int):
    """A project of ``n`` pool entries over 10 queries, each passage about 40 words."""
    import hashlib

    from labeler.store import init_db
    from labeler.store.schema import now

    db = init_db(path)
    queries = [f"q{i:03d}" for i in range(10)]
    db["queries"].insert_all({"query_id": q, "text": f"query text {q}", "meta": "{}",
                              "content_hash": hashlib.sha256(q.encode()).hexdigest()} for q in queries)
    db["pool_builds"].insert({"id": 1, "at": now(), "params": "{}"})
    docs, pool = [], []
    for i in range(n):
        q, doc_id = queries[i % 10], f"d{i:06d}"
        text = f"Passage {doc_id} " + " ".join(f"word{(i * 7 + k) % 997}" for k in range(40))
        docs.append({"doc_id": doc_id, "title": "", "text": text, "meta": "{}",
                     "content_hash": hashlib.sha256(text.encode()).hexdigest()})
        pool.append({"query_id": q, "doc_id": doc_id, "sources": json.dumps({"bench": i // 10 + 1}),
                     "priority": 1.0 / (i + 1), "position": i // 10 + 1, "added_at": now(), "build_id": 1})
    db["documents"].insert_all(docs)
    db["pool"].insert_all(pool)
    return db


def goldpool_child(port: int, concurrency: int, calls: int, folder: str, profile: bool,
                   out: multiprocessing.Queue) -> None:
    """One run_judge in this process: calls a second, CPU seconds per verdict, progress bytes, and
    when its imports began and ended (``time.time()``: its set-up is read against the server's
    first arrival)."""
    db = make_project(Path(folder) / f"bench-{concurrency}-{time.time_ns()}.db", calls)
    began = time.time()
    from labeler.judges.client import Endpoint
    from labeler.judges.run import run_judge
    from labeler.store.access import OWNER

    import openai  # noqa: F401 (loaded once by a run's first call: not a cost per verdict)
    import tenacity  # noqa: F401
    imported = time.time()
    progress = Path(folder) / "progress.txt"
    saved = os.dup(2)
    with progress.open("w") as handle:
        os.dup2(handle.fileno(), 2)
        sys.stderr = os.fdopen(os.dup(2), "w")
        try:
            profiler = None
            if profile:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            cpu, wall = time.process_time(), time.perf_counter()
            with Endpoint(f"http://127.0.0.1:{port}/v1", timeout=60) as endpoint:
                summary = run_judge(db, judge="bench", model="bench", endpoint=endpoint, concurrency=concurrency,
                                    progress=True, caller=OWNER)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if profiler is not None:
                profiler.disable()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            sys.stderr = sys.__stderr__
    if summary.calls != calls or summary.errors:
        raise SystemExit(f"goldpool made {summary.calls} calls ({summary.errors} errors), {calls} expected")
    top = ""
    if profiler is not None:
        import io
        import pstats

        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(18)
        top = text.getvalue()
    out.put({"rate": calls / wall, "cpu_ms": 1000 * cpu / calls, "progress_bytes": progress.stat().st_size,
             "profile": top, "began": began, "imported": imported})


def goldpool_rate(port: int, concurrency: int, calls: int, folder: str, profile: bool = False) -> dict:
    out: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=goldpool_child, args=(port, concurrency, calls, folder, profile, out))
    child.start()
    result = out.get(timeout=600)
    child.join(timeout=60)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=2.5,
                        help="Calls per run: this many seconds at the bound (at least 30 calls).")
    parser.add_argument("--profile", action="store_true", help="Profile one goldpool run at the largest N.")
    parser.add_argument("--no-openai", action="store_true", help="Leave out the openai client alone.")
    args = parser.parse_args()
    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports, args.delay, multiprocessing.Queue()), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    print(f"server: every reply after {args.delay * 1000:.0f} ms; {os.cpu_count()} cores; "
          f"{args.reps} repetitions of each N, plain, openai and goldpool in turn; "
          "'steady': answered a second at the server, first arrival to last reply, over the bound")
    print(f"{'N':>4} {'calls':>6} {'plain/bound':>16} {'openai/bound':>16} {'goldpool/bound':>16} "
          f"{'goldpool/plain':>15} {'in flight':>9} {'openai CPU ms':>13} {'CPU ms/verdict':>14} {'progress bytes':>14} "
          f"{'plain steady':>12} {'openai steady':>13} {'gp steady':>16} {'gp/plain steady':>15} {'imports s':>9} "
          f"{'set-up s':>8}")
    span = lambda xs: f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"  # noqa: E731
    med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "n/a"  # noqa: E731
    with tempfile.TemporaryDirectory() as folder:
        for n in args.concurrency:
            calls = max(30, round(n / args.delay * args.seconds))
            bound = n / args.delay
            row: dict[str, list] = {k: [] for k in ("plain", "alone", "alone_cpu", "gold", "cpu", "most", "written",
                                                    "p_steady", "a_steady", "g_steady", "imports", "setup")}
            for _ in range(args.reps):
                rate, stats = at_server(port, lambda: plain_rate(port, n, calls))
                row["plain"].append(rate / bound)
                row["p_steady"].append(steady(stats) / bound)
                if not args.no_openai:
                    got, stats = at_server(port, lambda: openai_rate(port, n, calls))
                    row["alone"].append(got["rate"] / bound)
                    row["a_steady"].append(steady(stats) / bound)
                    row["alone_cpu"].append(got["cpu_ms"])
                got, stats = at_server(port, lambda: goldpool_rate(port, n, calls, folder))
                row["most"].append(stats["most"])
                row["gold"].append(got["rate"] / bound)
                row["g_steady"].append(steady(stats) / bound)
                row["cpu"].append(got["cpu_ms"])
                row["written"].append(got["progress_bytes"])
                row["imports"].append(got["imported"] - got["began"])
                row["setup"].append(stats["first"] - got["imported"])
            ratios = [g / p for g, p in zip(row["gold"], row["plain"], strict=True)]
            steady_ratios = [g / p for g, p in zip(row["g_steady"], row["p_steady"], strict=True)]
            alone_cpu = statistics.median(row["alone_cpu"]) if row["alone_cpu"] else float("nan")
            print(f"{n:>4} {calls:>6} {span(row['plain']):>16} {span(row['alone']) if row['alone'] else 'n/a':>16} "
                  f"{span(row['gold']):>16} {span(ratios):>15} {max(row['most']):>9} {alone_cpu:>13.2f} "
                  f"{statistics.median(row['cpu']):>14.2f} {statistics.median(row['written']):>14.0f} "
                  f"{med(row['p_steady']):>12} {med(row['a_steady']):>13} {span(row['g_steady']):>16} "
                  f"{med(steady_ratios):>15} {med(row['imports']):>9} {med(row['setup']):>8}", flush=True)
        if args.profile:
            n = max(args.concurrency)
            got = goldpool_rate(port, n, max(30, round(n / args.delay * args.seconds)), folder, profile=True)
            print(f"\nProfile of one goldpool run at N = {n} (own time, top 18):\n{got['profile']}")
    server.terminate()


if __name__ == "__main__":
    main()
