"""Baselines: independent references and (later) hand-batched and peer implementations."""
