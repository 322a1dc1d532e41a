"""The gateway as an OAuth 2.1 authorization server for /mcp: hosted assistants (ChatGPT,
claude.ai, Claude Desktop through mcp-remote) connect without a pasted key.

The endpoints are the MCP SDK's own (`mcp.server.auth`: RFC 8414 metadata, RFC 7591
registration, /authorize with PKCE S256, /token, RFC 7009 revocation); this package is their
provider (storage and rules), the owner's consent page, and the bearer lookup the /mcp and REST
adapters call. A grant is a contour ApiKey (the chosen toolsets, the consenting owner as its
holder), so every rule of keys holds for it in the core.
"""
