"""A crowd of event-stream clients, as a process of its own (so its sockets
do not count against the pit's open-file limit in the test's process):
``python tests/support/flood.py PORT N ADDRESSES`` opens N /api/events streams
spread over ADDRESSES loopback source addresses (127.0.0.1, .2, ...), holds
them, prints one JSON line {status: count} once all are answered, and keeps
them open until its stdin closes."""

import asyncio
import collections
import json
import resource
import sys


async def one(port, source, out):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError as e:
        out["connect failed: %s" % e.strerror] += 1
        return None
    writer.write(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n" % port)
    try:
        line = await asyncio.wait_for(reader.readline(), 20)
    except (asyncio.TimeoutError, OSError):
        line = b""
    out[line.split()[1].decode() if len(line.split()) > 1 else "closed"] += 1
    return writer


async def main(port, n, addresses):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out = collections.Counter()
    writers = []
    for start in range(0, n, 100):
        writers += await asyncio.gather(*(one(port, "127.0.0.%d" % (1 + i % addresses), out)
                                          for i in range(start, min(n, start + 100))))
    print(json.dumps(out), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for w in writers:
        if w is not None:
            w.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
