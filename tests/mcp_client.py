"""Drives agent-pages with the official Python MCP SDK client (PyPI `mcp`, pinned in
.ci/run), as an agent would: over Streamable HTTP (`--http URL`, the SDK's default
"auto" negotiation, then the legacy `initialize` handshake) and through the stdio
bridge (`--stdio BINARY URL`, `agent-pages mcp --url URL` launched by the SDK).

Each session lists the tools (each with an outputSchema, against which the SDK
checks every successful result), publishes a page with a PIN, finds it with
search_pages, updates it, reads it whole and in parts (max_chars, offset), tries a
wrong PIN, archives it and reads it again (gone). A history session (both
transports) lists and reads a page's versions, restores one, rotates the PIN (the old
one refused after, the new one taking), claims the page and reads its history again
(not found without the PIN, found with it), and reports the new tools' annotations.
Over HTTP a last session uses the read-only face (`URL/readonly`): three tools, a
write refused. Prints one JSON line per session: what the Rust test checks.
Any surprise raises, so the process exits non-zero.
"""

import asyncio
import hashlib
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

PIN = "python sdk pin"
NEW_PIN = "python sdk new pin"
TOOLS = {
    "search_pages",
    "read_page",
    "list_pages",
    "publish_page",
    "update_page",
    "archive_page",
    "claim_page",
    "list_versions",
    "read_version",
    "restore_page",
    "rotate_pin",
}


def ok(result, what):
    if result.is_error:
        raise AssertionError(f"{what} failed: {result.content}")
    if not isinstance(result.structured_content, dict):
        raise AssertionError(f"{what}: no structured content")
    if not result.content or not result.content[0].text:
        raise AssertionError(f"{what}: no text")
    return result.structured_content


def refused(result, what):
    if not result.is_error:
        raise AssertionError(f"{what} was not refused: {result.structured_content}")
    return result.structured_content


async def session(server, label, title, mode="auto"):
    async with Client(server, mode=mode) as client:
        version = client.protocol_version
        tools = await client.list_tools()
        names = {tool.name for tool in tools.tools}
        if names != TOOLS:
            raise AssertionError(f"tools: {sorted(names)}")
        schemas = {tool.name: tool.input_schema for tool in tools.tools}

        # With an idempotency key, and again: the second call answers the first
        # answer and spends nothing (issue 32 §3).
        key = "session-" + hashlib.sha256(label.encode()).hexdigest()
        publish = {"title": title, "body": "First words.", "pin": PIN, "idempotency_key": key}
        created = ok(await client.call_tool("publish_page", publish), "publish_page")
        replayed = ok(
            await client.call_tool("publish_page", dict(reversed(list(publish.items())))),
            "publish_page again",
        )
        if replayed != created:
            raise AssertionError(f"a replay answered {replayed}, not {created}")
        slug = created["slug"]
        found = ok(
            await client.call_tool("search_pages", {"query": title.split()[0]}),
            "search_pages",
        )
        slugs = [row["slug"] for row in found["results"]]
        if slug not in slugs:
            raise AssertionError(f"search_pages did not find {slug}: {slugs}")
        updated = ok(
            await client.call_tool(
                "update_page", {"slug": slug, "pin": PIN, "body": "Second words."}
            ),
            "update_page",
        )
        page = ok(await client.call_tool("read_page", {"slug": slug}), "read_page")
        if page["body"] != "Second words." or page["version"] != updated["version"]:
            raise AssertionError(f"read_page: {page}")
        stale = refused(
            await client.call_tool(
                "update_page",
                {"slug": slug, "pin": PIN, "body": "Lost.", "expected_version": 1},
            ),
            "a stale expected_version",
        )
        # The body in parts of 5 characters, each result checked by the SDK against
        # read_page's outputSchema.
        parts, offset = [], 0
        while offset is not None:
            part = ok(
                await client.call_tool(
                    "read_page", {"slug": slug, "max_chars": 5, "offset": offset}
                ),
                "read_page in parts",
            )
            parts.append(part["body"])
            offset = part["next_offset"]
        wrong = refused(
            await client.call_tool(
                "archive_page", {"slug": slug, "pin": "not the pin at all"}
            ),
            "a wrong PIN",
        )
        archived = ok(
            await client.call_tool(
                "archive_page",
                {"slug": slug, "pin": PIN, "expected_version": updated["version"]},
            ),
            "archive_page",
        )
        gone = refused(
            await client.call_tool("read_page", {"slug": slug}), "reading a gone page"
        )
        listed = ok(await client.call_tool("list_pages", {}), "list_pages")
        print(
            json.dumps(
                {
                    "label": label,
                    "protocol_version": version,
                    "server": client.server_info.name if client.server_info else None,
                    "tools": sorted(names),
                    "output_schemas": sorted(
                        tool.name for tool in tools.tools if tool.output_schema is not None
                    ),
                    "parts": parts,
                    "publish_pin_pattern": schemas["publish_page"]["properties"]["pin"].get("pattern"),
                    "slug": slug,
                    "found": slugs,
                    "close_matches": found.get("close_matches"),
                    "updated_version": updated["version"],
                    "read_body": page["body"],
                    "wrong_pin": wrong,
                    "stale": stale,
                    "archived": archived,
                    "gone": gone,
                    "listed": [row["slug"] for row in listed["pages"]],
                }
            ),
            flush=True,
        )


async def history_session(server, label, title):
    """The history tools and rotate_pin, every result checked by the SDK against its
    tool's outputSchema."""
    async with Client(server) as client:
        tools = await client.list_tools()
        hints = {
            tool.name: tool.annotations.model_dump(by_alias=True, exclude_none=True)
            for tool in tools.tools
            if tool.annotations is not None
        }
        call = client.call_tool
        slug = ok(
            await call("publish_page", {"title": title, "body": "First words.", "pin": PIN}),
            "publish_page",
        )["slug"]
        ok(
            await call("update_page", {"slug": slug, "pin": PIN, "body": "Spam."}),
            "update_page",
        )
        listed = ok(await call("list_versions", {"slug": slug}), "list_versions")
        first = ok(
            await call("read_version", {"slug": slug, "version": 1}), "read_version"
        )
        restored = ok(
            await call(
                "restore_page",
                {"slug": slug, "pin": PIN, "version": 1, "expected_version": 2},
            ),
            "restore_page",
        )
        page = ok(await call("read_page", {"slug": slug}), "read_page")
        rotated = ok(
            await call("rotate_pin", {"slug": slug, "pin": PIN, "new_pin": NEW_PIN}),
            "rotate_pin",
        )
        old_pin = refused(
            await call("update_page", {"slug": slug, "pin": PIN, "body": "Old PIN."}),
            "the old PIN after rotate_pin",
        )
        new_pin = ok(
            await call("update_page", {"slug": slug, "pin": NEW_PIN, "body": "New PIN."}),
            "the new PIN",
        )
        ok(await call("claim_page", {"slug": slug, "pin": NEW_PIN}), "claim_page")
        hidden = refused(
            await call("list_versions", {"slug": slug}),
            "a claimed page's history without its PIN",
        )
        shown = ok(
            await call("list_versions", {"slug": slug, "pin": NEW_PIN, "per_page": 2}),
            "a claimed page's history with its PIN",
        )
        print(
            json.dumps(
                {
                    "label": label,
                    "slug": slug,
                    "hints": {name: hints.get(name) for name in sorted(TOOLS)},
                    "listed": [[v["version"], v["kind"]] for v in listed["versions"]],
                    "first": [first["title"], first["body"], first["kind"]],
                    "restored": restored,
                    "page": [page["body"], page["version"]],
                    "rotated": rotated,
                    "old_pin": old_pin,
                    "new_pin_version": new_pin["version"],
                    "hidden": hidden,
                    "shown": [[v["version"], v["kind"]] for v in shown["versions"]],
                    "shown_next_page": shown["next_page"],
                }
            ),
            flush=True,
        )


async def read_only_session(url, label):
    """The read-only face: its tools, a write refused as a tool it does not have,
    a read served."""
    async with Client(url) as client:
        tools = await client.list_tools()
        names = sorted(tool.name for tool in tools.tools)
        try:
            await client.call_tool("publish_page", {"title": "Visitor notes", "pin": PIN})
            publish = "served"
        except Exception as e:  # the SDK raises the JSON-RPC error it was answered
            publish = str(e)
        listed = ok(await client.call_tool("list_pages", {}), "list_pages (read-only)")
        print(
            json.dumps(
                {
                    "label": label,
                    "tools": names,
                    "publish": publish,
                    "listed": [row["slug"] for row in listed["pages"]],
                }
            ),
            flush=True,
        )


async def main(argv):
    if argv[1] == "--http":
        url = argv[2]
        await session(url, "http", "Python walrus notes")
        await session(url, "http-legacy", "Python narwhal notes", mode="legacy")
        await history_session(url, "history-http", "Python heron history")
        await read_only_session(f"{url}/readonly", "read-only")
    elif argv[1] == "--stdio":
        binary, url = argv[2], argv[3]
        params = StdioServerParameters(command=binary, args=["mcp", "--url", url])
        await session(params, "stdio", "Python pelican notes")
        await history_session(params, "history-stdio", "Python puffin history")
    else:
        raise SystemExit(f"usage: {argv[0]} --http URL | --stdio BINARY URL")


asyncio.run(main(sys.argv))
