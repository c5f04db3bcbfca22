#!/usr/bin/env python3
"""instant-responses.py: a Responses API stand-in that answers at once.

For `make bench` only: it measures what a turn costs aptix itself, so the
server must cost as little as possible. POST /v1/responses gets a fixed,
valid Response object (or, with "stream": true in the body, a short SSE
stream: created, in_progress, output_item.added, content_part.added, two
deltas, the .done events and completed), with a fresh response id each
time. No validation, no state, no logging. Anything else gets a 404.

    python3 t/perf/instant-responses.py --port-file FILE [--answer-bytes N]

With --answer-bytes N, every non-streamed answer is a different text of
about N bytes (words drawn from a generator seeded by the request count),
so a store holds distinct answers, as in a real session.

writes the port it listens on (127.0.0.1, chosen by the OS) to FILE and
serves until SIGTERM or SIGINT. Use t/standin/openai_standin.py for
tests: this one checks nothing.
"""
import argparse
import asyncio
import json
import os
import random
import signal

TEXT = "Done: the change is made and the tests pass."
RID = "resp_" + "0" * 48          # replaced by a counter per request
MID = "msg_" + "1" * 48


def response(status, output, usage):
    return {
        "id": RID, "object": "response", "created_at": 1700000000,
        "status": status, "background": False, "error": None,
        "incomplete_details": None, "instructions": None,
        "max_output_tokens": None, "max_tool_calls": None,
        "model": "gpt-5", "output": output, "parallel_tool_calls": True,
        "previous_response_id": None, "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None, "service_tier": "default",
        "store": True, "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_logprobs": 0,
        "top_p": 1.0, "truncation": "disabled", "usage": usage,
        "user": None, "metadata": {}}


PART = {"type": "output_text", "annotations": [], "logprobs": [],
        "text": TEXT}
ITEM = {"id": MID, "type": "message", "status": "completed",
        "content": [PART], "role": "assistant"}
USAGE = {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens": 12,
         "output_tokens_details": {"reasoning_tokens": 0},
         "total_tokens": 52}
FULL = response("completed", [ITEM], USAGE)


def dumps(o):
    return json.dumps(o, separators=(",", ":"))


def sse():
    half = len(TEXT) // 2
    events = [
        {"type": "response.created",
         "response": response("in_progress", [], None)},
        {"type": "response.in_progress",
         "response": response("in_progress", [], None)},
        {"type": "response.output_item.added", "output_index": 0,
         "item": dict(ITEM, status="in_progress", content=[])},
        {"type": "response.content_part.added", "item_id": MID,
         "output_index": 0, "content_index": 0,
         "part": dict(PART, text="")},
        {"type": "response.output_text.delta", "item_id": MID,
         "output_index": 0, "content_index": 0, "delta": TEXT[:half],
         "logprobs": []},
        {"type": "response.output_text.delta", "item_id": MID,
         "output_index": 0, "content_index": 0, "delta": TEXT[half:],
         "logprobs": []},
        {"type": "response.output_text.done", "item_id": MID,
         "output_index": 0, "content_index": 0, "text": TEXT,
         "logprobs": []},
        {"type": "response.content_part.done", "item_id": MID,
         "output_index": 0, "content_index": 0, "part": PART},
        {"type": "response.output_item.done", "output_index": 0,
         "item": ITEM},
        {"type": "response.completed", "response": FULL},
    ]
    out = []
    for n, ev in enumerate(events):
        ev["sequence_number"] = n
        data = ("event: %s\ndata: %s\n\n" % (ev["type"], dumps(ev))).encode()
        out.append(b"%x\r\n%s\r\n" % (len(data), data))   # one chunk each
    return b"".join(out) + b"0\r\n\r\n"


JSON_BODY = dumps(FULL).encode()
JSON_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\nopenai-processing-ms: 0\r\n\r\n"
             % len(JSON_BODY))
SSE_HEAD = (b"HTTP/1.1 200 OK\r\n"
            b"Content-Type: text/event-stream; charset=utf-8\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
SSE_BODY = sse()
NOT_FOUND = (b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
             b"Content-Length: 2\r\n\r\n{}")
RID_B = RID.encode()
counter = 0
answer_bytes = 0
WORDS = ("the parser reads each token and the buffer keeps its offset; "
         "a retry waits before the next query so the cache stays warm and "
         "the index is rebuilt when a chunk changes its score").split()


def long_body(n):
    rnd = random.Random(n)
    words = []
    size = 0
    while size < answer_bytes:
        w = rnd.choice(WORDS)
        words.append(w)
        size += len(w) + 1
        if rnd.random() < 0.08:
            words.append("\n\n`%s_%d()`" % (w, rnd.randint(0, 999)))
    part = dict(PART, text=" ".join(words))
    full = response("completed", [dict(ITEM, content=[part])], USAGE)
    body = dumps(full).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nopenai-processing-ms: 0\r\n\r\n"
            % len(body)) + body


async def serve(reader, writer):
    global counter
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            if not head.startswith(b"POST /v1/responses "):
                writer.write(NOT_FOUND)
                await writer.drain()
                continue
            counter += 1
            rid = b"resp_%048x" % counter
            if b'"stream":true' in body.replace(b" ", b""):
                writer.write(SSE_HEAD + SSE_BODY.replace(RID_B, rid))
            elif answer_bytes:
                writer.write(long_body(counter).replace(RID_B, rid))
            else:
                writer.write(JSON_HEAD + JSON_BODY.replace(RID_B, rid))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError,
            asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--answer-bytes", type=int, default=0)
    args = ap.parse_args()
    global answer_bytes
    answer_bytes = args.answer_bytes
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, args.port_file)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(
            sig, lambda: stop.done() or stop.set_result(None))
    async with server:
        await stop
    try:
        os.unlink(args.port_file)
    except OSError:
        pass


if __name__ == "__main__":
    asyncio.run(main())
