"""The Hermes / Qwen text adapter; its `?format=` name is in formats.py."""
