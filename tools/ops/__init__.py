"""Operations: /health, /metrics, structured call logs, Sentry and the owners' dashboard."""
