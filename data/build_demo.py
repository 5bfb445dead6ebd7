"""Rebuild the demo corpus from the documentation that ships inside Python itself.

The demo corpus is real technical text that any machine can rebuild offline: the language
reference topics behind ``help()`` (``pydoc_data.topics``) cut into passage-sized chunks, plus
the docstrings of a fixed list of standard-library modules, classes and functions. It is the
kind of corpus a RAG system over documentation retrieves from.

Usage::

    python data/build_demo.py                # writes data/demo/corpus.jsonl
    python data/build_demo.py --embeddings   # writes data/demo/embeddings/ from the corpus

The embeddings are those ``goldpool build-pool`` computes for the demo corpus and queries with
the default model (all-MiniLM-L6-v2), in the format of its embedding cache (one folder per
model identity: ``vectors.f32``, ``keys.txt`` with each text's content hash, ``meta.json``).
``goldpool demo`` seeds the project's cache with them, so its first pool build encodes
nothing; a chunk changed since only has its own vector computed. A test re-encodes a sample
and compares.

The committed file was built with the Python named in each chunk's ``python`` field; another
Python version gives slightly different text, so the committed file is what the demo and the
tests use. The queries in ``data/demo/queries.jsonl`` were written by hand for this corpus.
"""

from __future__ import annotations

import importlib
import inspect
import json
import platform
import re
import sys
from collections.abc import Iterator
from pathlib import Path

#: Chunks are cut at paragraph boundaries and aim at this many words.
TARGET_WORDS = 80
#: A paragraph-run is closed before it exceeds this many words.
MAX_WORDS = 160
#: Docstrings shorter than this are not useful passages.
MIN_DOC_WORDS = 15

STDLIB_MODULES = [
    "argparse", "base64", "bisect", "calendar", "collections", "contextlib", "copy", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "enum", "fnmatch", "fractions",
    "functools", "glob", "gzip", "hashlib", "heapq", "hmac", "html", "http.client",
    "inspect", "io", "ipaddress", "itertools", "json", "logging", "operator", "os.path",
    "pathlib", "pickle", "pprint", "queue", "random", "re", "secrets", "shlex", "shutil",
    "sqlite3", "statistics", "string", "subprocess", "tempfile", "textwrap", "threading",
    "time", "timeit", "typing", "unittest", "urllib.parse", "uuid", "warnings", "weakref",
    "zipfile",
]


def _words(text: str) -> int:
    return len(text.split())


def _split_long(paragraph: str) -> list[str]:
    """Cut a paragraph longer than MAX_WORDS at line breaks into pieces of at most that size."""
    if _words(paragraph) <= MAX_WORDS:
        return [paragraph]
    pieces: list[str] = []
    current: list[str] = []
    for line in paragraph.splitlines():
        if current and _words("\n".join(current)) + _words(line) > MAX_WORDS:
            pieces.append("\n".join(current))
            current = []
        current.append(line)
    pieces.append("\n".join(current))
    return pieces


def _chunk_paragraphs(paragraphs: list[str]) -> Iterator[str]:
    """Greedily join consecutive paragraphs into chunks of about TARGET_WORDS words."""
    current: list[str] = []
    size = 0
    for para in (piece for p in paragraphs for piece in _split_long(p)):
        n = _words(para)
        if current and (size + n > MAX_WORDS or size >= TARGET_WORDS):
            yield "\n\n".join(current)
            current, size = [], 0
        current.append(para)
        size += n
    if current:
        yield "\n\n".join(current)


def topic_chunks() -> Iterator[dict[str, str]]:
    """The language-reference topics, one chunk per run of paragraphs."""
    from pydoc_data.topics import topics

    for name in sorted(topics):
        text = topics[name].strip()
        lines = text.splitlines()
        title = lines[0].strip() if lines else name
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        for i, chunk in enumerate(_chunk_paragraphs(paragraphs), start=1):
            if _words(chunk) >= MIN_DOC_WORDS:
                yield {"doc_id": f"ref-{name}-{i:02d}", "title": title, "text": chunk,
                       "source": "language reference", "topic": name}


def _public_members(module: object) -> Iterator[tuple[str, object]]:
    for name, member in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if inspect.isclass(member) or inspect.isfunction(member) or inspect.isbuiltin(member):
            if getattr(member, "__module__", None) == module.__name__:  # type: ignore[attr-defined]
                yield name, member


def docstring_chunks() -> Iterator[dict[str, str]]:
    """Docstrings of the listed modules and of their public classes and functions."""
    for module_name in STDLIB_MODULES:
        module = importlib.import_module(module_name)
        entries = [(module_name, module)]
        entries += [(f"{module_name}.{n}", m) for n, m in _public_members(module)]
        for qualname, obj in entries:
            doc = inspect.getdoc(obj) or ""
            paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc) if p.strip()]
            for i, chunk in enumerate(_chunk_paragraphs(paragraphs), start=1):
                if _words(chunk) >= MIN_DOC_WORDS:
                    yield {"doc_id": f"lib-{qualname}-{i:02d}", "title": qualname, "text": chunk,
                           "source": "library docstring", "topic": module_name}


def main(out: Path) -> int:
    """Write the corpus; return how many chunks it has.

    A chunk whose text an earlier chunk already has is left out (the language reference
    repeats whole passages under several topics, and sibling classes share docstrings): an
    annotator would otherwise grade the same text twice. The first one, in the order topics
    then docstrings, each sorted by name, is kept, so every kept chunk keeps its doc_id.
    """
    version = platform.python_version()
    seen: set[str] = set()
    texts: set[str] = set()
    n = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for record in [*topic_chunks(), *docstring_chunks()]:
            if record["doc_id"] in seen or record["text"] in texts:
                continue
            seen.add(record["doc_id"])
            texts.add(record["text"])
            record["python"] = version
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def build_embeddings(demo_dir: Path) -> int:
    """Encode the demo corpus and queries into ``demo_dir/embeddings`` (replaced whole)."""
    import shutil
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pooling.dense import DenseRetriever
    from pooling.readers import read_corpus, read_queries
    from pooling.retrieve import query_key
    from pooling.types import search_text

    documents = list(read_corpus(demo_dir / "corpus.jsonl"))
    queries = list(read_queries(demo_dir / "queries.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        retriever = DenseRetriever(tmp, progress=True)
        doc_texts = [search_text(d.title, d.text) for d in documents]
        retriever.embed([d.content_hash for d in documents], lambda ps: [doc_texts[p] for p in ps])
        q_texts = [q.text for q in queries]
        retriever.embed([query_key(t) for t in q_texts], lambda ps: [q_texts[p] for p in ps])
        built = Path(tmp) / retriever.identity
        # No machine's path in a shipped file: the model is named, not located.
        (built / "meta.json").write_text(json.dumps({"dim": retriever.cache.dim, "model": "all-MiniLM-L6-v2"}))
        target = demo_dir / "embeddings"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(built, target / retriever.identity)
        return len(retriever.cache)


if __name__ == "__main__":
    if sys.argv[1:] == ["--embeddings"]:
        demo = Path(__file__).parent / "demo"
        print(f"wrote {build_embeddings(demo)} vectors to {demo / 'embeddings'}")
    else:
        target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "demo" / "corpus.jsonl"
        count = main(target)
        print(f"wrote {count} chunks to {target}")
