"""The MCP server: the docs for AI agents (desktop assistants, coding agents), through the same
index and access rules as Slack. A surface like bot/: it calls rag's public API and state, never
bot (which mounts it on `docsbot serve`). agents/tools.py: search_docs, ask_docs, read_doc;
agents/server.py: the SDK server; agents/http.py: `/mcp`, its tokens and rate limit."""

SURFACE = "mcp"  # the `surface` label of the tools' answers in the metrics (listed in bot/surfaces.py)
