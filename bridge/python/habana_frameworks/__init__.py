"""Compatibility namespace: scripts written for the real stack import habana_frameworks.torch."""
