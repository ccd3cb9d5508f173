"""The faces: the command line (cli, render, doctor), the HTTP server (JSON API, SSE, the
OpenAI-compatible /v1, the web page) and MCP. They build requests for ragqa.app and render its
results; no logic of their own."""
