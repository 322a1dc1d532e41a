"""What tests/ and benchmarks/ share, so neither imports the other: the production-shaped
cluster (cluster.py) and the TCP proxies that cut its connections (proxy.py), a fake upstream
with fixed answers (fake_upstream.py), a valid order (orders.py) and the text protocol's
corpus of model replies (text_corpus.py). Never imported by the product."""
