"""Function-calling adapters (GigaChat, YandexGPT, OpenAI); their `?format=` names are in formats.py."""
